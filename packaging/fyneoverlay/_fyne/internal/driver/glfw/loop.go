// Session Supervisor's patch of Fyne's GLFW event loop, applied at build
// time with `go build -overlay` (packaging/fyneoverlay: the Makefile's and
// the end-to-end suite's app builds compile Fyne from a copy outside the
// module cache, with this file in place of the copy's). It replaces
//
//	fyne.io/fyne/v2@v2.7.1/internal/driver/glfw/loop.go
//	(upstream sha256 d15914b9536c96cfdb7627b6b78b7ca3ad31b56428b2061f8421e93bbe859e45)
//
// Why: upstream's runGL ticks 60 times a second for as long as the app
// runs, polling GLFW and walking every window each time, whether anything
// changed or not: 1.4-2.1 % of a core for a window at rest. What differs
// from upstream, and nothing else:
//
//   - runGL keeps upstream's 60 Hz tick while the window is active (a
//     queued func ran, an input event woke it, or a frame repainted in the
//     last idleAfter). Once idle it stops the ticker and sleeps in
//     glfw.WaitEventsTimeout(idleWait) on the main thread: an input event
//     wakes it at once (and returns it to the 60 Hz tick), and so does a
//     func queued with runOnMain/fyne.Do, which posts an empty event
//     (wakeMain) while the loop sleeps. Each wake (or idleWait without one)
//     runs the tick's work once: close and resize checks, animations, the
//     frame.
//   - runOnMainWithWait counts what it queues (queued) and calls wakeMain
//     after queueing: the loop never sleeps while a func is on its way
//     through funcQueue's goroutine, so no func waits for the timeout.
//   - drawSingleFrame reports whether it repainted a window (an animation
//     repaints every frame, so it keeps the loop active).
//   - The tick's work after glfw.PollEvents and the shutdown are functions
//     of their own (tick, shutdown), their bodies upstream's, so that the
//     sleep's wake runs the same work.
//
// Nothing is dropped or reordered: events are processed by GLFW in order
// either way, and funcs still run one at a time in queue order on the
// main thread. Revisit this file whenever go.mod's Fyne version changes
// (packaging/fyneoverlay's test fails until its version and hash agree).

package glfw

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-gl/glfw/v3.3/glfw"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/internal/app"
	"fyne.io/fyne/v2/internal/async"
	"fyne.io/fyne/v2/internal/cache"
	"fyne.io/fyne/v2/internal/driver/common"
	"fyne.io/fyne/v2/internal/painter"
	"fyne.io/fyne/v2/internal/scale"
)

type funcData struct {
	f    func()
	done chan struct{} // Zero allocation signalling channel
}

// channel for queuing functions on the main thread
var (
	funcQueue        = async.NewUnboundedChan[funcData]()
	running, drained atomic.Bool
)

// The idle loop (Session Supervisor's patch, see the file's header).
const (
	// idleAfter is how long after the last sign of activity runGL keeps
	// upstream's 60 Hz tick: a drag, a scroll or a burst of updates is
	// handled exactly as upstream, frames paced by the tick.
	idleAfter = 500 * time.Millisecond
	// idleWait is the longest the idle loop sleeps. Input and queued funcs
	// wake it sooner; this bounds only what reaches the loop by neither (a
	// canvas marked dirty outside the main goroutine, the render caches'
	// upkeep in drawSingleFrame).
	idleWait = 250 * time.Millisecond
)

var (
	// ready is always ready to receive from.
	ready = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
	// queued counts funcs sent to funcQueue and not yet taken off it.
	queued atomic.Int64
	// waitMu guards waiting, true while the main thread sleeps in
	// glfw.WaitEventsTimeout: a sender posts an empty event only then, so
	// never before glfw.Init nor after glfw.Terminate.
	waitMu  sync.Mutex
	waiting bool
)

// Arrange that main.main runs on main thread.
func init() {
	runtime.LockOSThread()
	async.SetMainGoroutine()
}

// force a function f to run on the main thread
func runOnMain(f func()) {
	runOnMainWithWait(f, true)
}

// force a function f to run on the main thread and specify if we should wait for it to return
func runOnMainWithWait(f func(), wait bool) {
	// If we are on main before app run just execute - otherwise add it to the main queue and wait.
	// We also need to run it as-is if the app is in the process of shutting down as the queue will be stopped.
	if (!running.Load() && async.IsMainGoroutine()) || drained.Load() {
		f()
		return
	}

	queued.Add(1)
	if wait {
		done := common.DonePool.Get()
		defer common.DonePool.Put(done)

		funcQueue.In() <- funcData{f: f, done: done}
		wakeMain()
		<-done
	} else {
		funcQueue.In() <- funcData{f: f}
		wakeMain()
	}
}

// wakeMain ends the idle loop's sleep, if it sleeps, so that a func just
// queued runs now rather than after idleWait.
func wakeMain() {
	waitMu.Lock()
	defer waitMu.Unlock()
	if !waiting {
		return
	}
	// go-gl's glfw hands errors from one channel to whichever call looks
	// next, on any thread: an error the main thread's call would have
	// handled could surface here as a panic. It costs only a slower wake
	// (the loop still wakes after idleWait), so it is logged, not raised.
	defer func() {
		if r := recover(); r != nil {
			fyne.LogError("waking the event loop", fmt.Errorf("%v", r))
		}
	}()
	glfw.PostEmptyEvent()
}

// waitEvents sleeps until an event arrives or idleWait passes, processing
// the events as PollEvents does. It does not sleep while a func is queued
// (slept false: the caller takes it off funcQueue); early reports a wake
// before idleWait (an input event or wakeMain's empty event).
func waitEvents() (slept, early bool) {
	waitMu.Lock()
	if queued.Load() > 0 {
		waitMu.Unlock()
		return false, false
	}
	waiting = true
	waitMu.Unlock()

	start := time.Now()
	glfw.WaitEventsTimeout(idleWait.Seconds())
	early = time.Since(start) < idleWait

	waitMu.Lock()
	waiting = false
	waitMu.Unlock()
	return true, early
}

// runQueued runs one func taken off funcQueue.
func runQueued(f funcData) {
	queued.Add(-1)
	f.f()
	if f.done != nil {
		f.done <- struct{}{}
	}
}

// drawSingleFrame paints every visible window whose canvas is dirty and
// reports whether it painted one.
func (d *gLDriver) drawSingleFrame() (painted bool) {
	refreshed := false
	for _, win := range d.windowList() {
		w := win.(*window)
		if w.closing {
			continue
		}

		// CheckDirtyAndClear must be checked after visibility,
		// because when a window becomes visible, it could be
		// showing old content without a dirty flag set to true.
		// Do the clear if and only if the window is visible.
		if !w.visible || !w.canvas.CheckDirtyAndClear() {
			// Window hidden or not being redrawn, mark canvasForObject
			// cache alive if it hasn't been done recently
			// n.b. we need to make sure threshold is a bit *after*
			// time.Now() - CacheDuration()
			threshold := time.Now().Add(10*time.Second - cache.ValidDuration)
			if w.lastWalkedTime.Before(threshold) {
				w.canvas.WalkTrees(nil, func(node *common.RenderCacheNode, _ fyne.Position) {
					// marks canvas for object cache entry alive
					_ = cache.GetCanvasForObject(node.Obj())
					// marks renderer cache entry alive
					if wid, ok := node.Obj().(fyne.Widget); ok {
						_, _ = cache.CachedRenderer(wid)
					}
				})
				w.lastWalkedTime = time.Now()
			}
			continue
		}

		painted = true
		w.RunWithContext(func() {
			if w.driver.repaintWindow(w) {
				refreshed = true
			}
		})
	}
	cache.Clean(refreshed)
	return painted
}

func (d *gLDriver) runGL() {
	if !running.CompareAndSwap(false, true) {
		return // Run was called twice.
	}

	d.init()
	if d.trayStart != nil {
		d.trayStart()
	}

	fyne.CurrentApp().Settings().AddListener(func(set fyne.Settings) {
		painter.ClearFontCache()
		cache.ResetThemeCaches()
		app.ApplySettingsWithCallback(set, fyne.CurrentApp(), func(w fyne.Window) {
			c, ok := w.Canvas().(*glCanvas)
			if !ok {
				return
			}
			c.applyThemeOutOfTreeObjects()
			c.reloadScale()
		})
	})

	if f := fyne.CurrentApp().Lifecycle().(*app.Lifecycle).OnStarted(); f != nil {
		f()
	}

	// Upstream's 60 Hz tick while active; once idle (nothing for
	// idleAfter), a sleep in glfw.WaitEventsTimeout that input and queued
	// funcs end (see the file's header). sleep is ready only while idle
	// with nothing queued; the stopped ticker's channel never is.
	eventTick := time.NewTicker(time.Second / 60)
	lastActive, ticking := time.Now(), true
	// pending: a func is on its way through funcQueue's goroutine.
	pending := false
	for {
		if ticking && time.Since(lastActive) >= idleAfter {
			eventTick.Stop()
			ticking = false
		} else if !ticking && time.Since(lastActive) < idleAfter {
			eventTick.Reset(time.Second / 60)
			ticking = true
		}
		var sleep <-chan struct{}
		if !ticking && !pending {
			sleep = ready
		}

		select {
		case <-d.done:
			d.shutdown(eventTick)
			return
		case f := <-funcQueue.Out():
			runQueued(f)
			lastActive, pending = time.Now(), false
		case <-eventTick.C:
			d.pollEvents()
			if d.tick() {
				lastActive = time.Now()
			}
		case <-sleep:
			slept, early := waitEvents()
			if !slept {
				pending = true
				continue
			}
			if d.tick() || early {
				lastActive = time.Now()
			}
		}
	}
}

// shutdown ends the loop: upstream's code from runGL's d.done case.
func (d *gLDriver) shutdown(eventTick *time.Ticker) {
	eventTick.Stop()
	d.Terminate()
	l := fyne.CurrentApp().Lifecycle().(*app.Lifecycle)
	if f := l.OnStopped(); f != nil {
		l.QueueEvent(f)
	}

	// as we are shutting down make sure we drain the pending funcQueue and close it out.
	for len(funcQueue.Out()) > 0 {
		f := <-funcQueue.Out()
		if f.done != nil {
			f.done <- struct{}{}
		}
	}
	drained.Store(true)
	funcQueue.Close()
}

// tick is the work of upstream's tick after its glfw.PollEvents: close and
// resize checks, animations, the frame. It reports whether it painted.
func (d *gLDriver) tick() (painted bool) {
	for i := 0; i < len(d.windows); i++ {
		w := d.windows[i].(*window)
		if w.viewport == nil {
			continue
		}

		if w.viewport.ShouldClose() {
			d.destroyWindow(w, i)
			i-- // Trailing windows are moved forward one step.
			continue
		}

		expand := w.shouldExpand
		fullScreen := w.fullScreen

		if expand && !fullScreen {
			w.fitContent()
			shouldExpand := w.shouldExpand
			w.shouldExpand = false
			view := w.viewport

			if shouldExpand && runtime.GOOS != "js" {
				view.SetSize(w.shouldWidth, w.shouldHeight)
			}
		}
	}

	d.animation.TickAnimations()
	return d.drawSingleFrame()
}

func (d *gLDriver) destroyWindow(w *window, index int) {
	w.visible = false
	w.viewport.Destroy()
	w.destroy(d)

	if index < len(d.windows)-1 {
		copy(d.windows[index:], d.windows[index+1:])
	}
	d.windows[len(d.windows)-1] = nil
	d.windows = d.windows[:len(d.windows)-1]

	if len(d.windows) == 0 {
		d.Quit()
	}
}

func (d *gLDriver) repaintWindow(w *window) bool {
	canvas := w.canvas
	freed := false
	if canvas.EnsureMinSize() {
		w.shouldExpand = true
	}
	freed = canvas.FreeDirtyTextures() > 0

	updateGLContext(w)
	canvas.paint(canvas.Size())

	view := w.viewport
	visible := w.visible

	if view != nil && visible {
		view.SwapBuffers()
	}

	// mark that we have walked the window and don't
	// need to walk it again to mark caches alive
	w.lastWalkedTime = time.Now()
	return freed
}

// refreshWindow requests that the specified window be redrawn
func refreshWindow(w *window) {
	w.canvas.SetDirty()
}

func updateGLContext(w *window) {
	canvas := w.canvas
	size := canvas.Size()

	// w.width and w.height are not correct if we are maximised, so figure from canvas
	winWidth := float32(scale.ToScreenCoordinate(canvas, size.Width)) * canvas.texScale
	winHeight := float32(scale.ToScreenCoordinate(canvas, size.Height)) * canvas.texScale

	canvas.Painter().SetFrameBufferScale(canvas.texScale)
	canvas.Painter().SetOutputSize(int(winWidth), int(winHeight))
}
