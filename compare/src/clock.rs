//! The clocks a measurement can be read with.
//!
//! On a shared machine the wall clock also counts the time the scheduler gave to other
//! processes, which varies from one millisecond to the next; the CPU-time clocks count only
//! the time this thread (or, for the JAX subprocess, its process) actually ran. CPU time is
//! the default; `--clock wall` measures elapsed time instead.

use std::time::{Duration, Instant};

/// Which clock times the arms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Clock {
    /// CPU time of the timing thread (`CLOCK_THREAD_CPUTIME_ID`); for the JAX subprocess,
    /// of its process (`time.process_time_ns`, which includes XLA's threads).
    Cpu,
    /// Elapsed time (`Instant`; `time.perf_counter_ns` in the JAX subprocess).
    Wall,
}

impl Clock {
    /// The name the JAX peer understands.
    pub fn name(self) -> &'static str {
        match self {
            Clock::Cpu => "cpu",
            Clock::Wall => "wall",
        }
    }
}

/// A started measurement.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    clock: Clock,
    wall: Instant,
    cpu: Duration,
}

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux and the
    // BSDs define. On failure `ts` stays zero and the measurement reads zero time, which
    // the caller's loop turns into more calls, not a crash.
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

impl Stopwatch {
    /// Starts now.
    pub fn start(clock: Clock) -> Self {
        Self {
            clock,
            wall: Instant::now(),
            cpu: if clock == Clock::Cpu {
                thread_cpu()
            } else {
                Duration::ZERO
            },
        }
    }

    /// Time since the start on the chosen clock.
    pub fn elapsed(&self) -> Duration {
        match self.clock {
            Clock::Wall => self.wall.elapsed(),
            Clock::Cpu => thread_cpu().saturating_sub(self.cpu),
        }
    }

    /// Wall time since the start, whatever the clock (a guard against a stalled CPU clock).
    pub fn wall(&self) -> Duration {
        self.wall.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_advances_with_work_and_not_with_sleep() {
        let w = Stopwatch::start(Clock::Cpu);
        std::thread::sleep(Duration::from_millis(50));
        let slept = w.elapsed();
        assert!(slept < Duration::from_millis(25), "{slept:?}");
        let mut x = 0u64;
        while w.wall() < Duration::from_millis(80) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        assert!(w.elapsed() > slept, "busy work must add CPU time");
    }
}
