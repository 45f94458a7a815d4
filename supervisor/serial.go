package supervisor

import "sync"

// serial runs one session's side effects (stdin writes, spawns, signals,
// their intent and outcome rows) one at a time, in the order they were
// queued, on a goroutine of its own — never on the caller's, and never under
// the runtime's lock. A session whose agent stopped reading its input holds
// up only its own queue. The goroutine exists only while work is queued.
type serial struct {
	mu      sync.Mutex
	jobs    []func()
	running bool
	// idle is signalled when the queue empties (for Settle).
	idle *sync.Cond
	wg   *sync.WaitGroup
}

func newSerial(wg *sync.WaitGroup) *serial {
	s := &serial{wg: wg}
	s.idle = sync.NewCond(&s.mu)
	return s
}

// do queues fn and returns at once.
func (s *serial) do(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs = append(s.jobs, fn)
	if !s.running {
		s.running = true
		s.wg.Add(1)
		go s.drain()
	}
}

func (s *serial) drain() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if len(s.jobs) == 0 {
			s.running = false
			s.idle.Broadcast()
			s.mu.Unlock()
			return
		}
		fn := s.jobs[0]
		s.jobs[0] = nil
		s.jobs = s.jobs[1:]
		s.mu.Unlock()
		fn()
	}
}

// busy reports whether a job is queued or running.
func (s *serial) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// settle waits until the queue is empty.
func (s *serial) settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.running {
		s.idle.Wait()
	}
}
