//! Log lines off the request path. A line is appended to a shared buffer: a lock held for one
//! copy, no syscall and no wake-up of another thread. A background thread writes what has
//! gathered to the output every [`FLUSH_INTERVAL`] (sooner once [`FLUSH_BYTES`] are waiting),
//! one `write` per batch. With nothing to write the thread sleeps until the next line: the
//! line that starts a batch wakes it (at most one wake-up per interval under load), and an
//! idle server does not wake up a hundred times a second.
//!
//! Why not `tracing-appender`'s non-blocking writer: it sends each line through a channel to
//! its thread, waking that thread (a futex call and a context switch) and writing once per line
//! whenever the thread keeps up, which is a noticeable share of the engine's CPU on a cheap
//! query under load. Nothing is dropped: past [`MAX_PENDING`] bytes (the output is blocked), a
//! logging thread waits for the writer to catch up.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// Longest a line waits before it is written.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(10);
/// Waiting bytes that wake the writer before the interval is over.
pub const FLUSH_BYTES: usize = 256 * 1024;
/// Waiting bytes past which logging blocks until the writer catches up.
pub const MAX_PENDING: usize = 8 * 1024 * 1024;

/// The buffer shared by every logging thread and the writer thread.
#[derive(Debug, Default)]
pub struct Lines {
    pending: Mutex<Pending>,
    /// Wakes the writer (a full batch, or the end).
    wake: Condvar,
    /// Wakes logging threads waiting for room.
    room: Condvar,
}

#[derive(Debug, Default)]
struct Pending {
    bytes: Vec<u8>,
    /// Set by [`LinesGuard`]: the writer writes what is left and stops; later lines are
    /// written by the thread that logs them.
    stopped: bool,
    /// The writer sleeps until a line arrives: the next line must wake it.
    idle: bool,
    /// Times the writer thread woke up (for the tests).
    rounds: usize,
}

impl Lines {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Write for &Lines {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let mut pending = self.lock();
        while pending.bytes.len() >= MAX_PENDING && !pending.stopped {
            pending = self
                .room
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if pending.stopped {
            drop(pending);
            let mut out = std::io::stdout().lock();
            out.write_all(line)?;
            out.flush()?;
            return Ok(line.len());
        }
        let before = pending.bytes.len();
        pending.bytes.extend_from_slice(line);
        if (pending.idle && before == 0)
            || (before < FLUSH_BYTES && pending.bytes.len() >= FLUSH_BYTES)
        {
            self.wake.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // Lines are flushed by the writer thread; a caller never waits for it.
        Ok(())
    }
}

/// Keeps the writer thread; dropping it writes every line still waiting, then stops it.
#[derive(Debug)]
pub struct LinesGuard {
    lines: Arc<Lines>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for LinesGuard {
    fn drop(&mut self) {
        self.lines.lock().stopped = true;
        self.lines.wake.notify_one();
        self.lines.room.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The shared buffer (give it to the log layer as its writer) and the guard of the thread that
/// writes it to `out`.
pub fn buffered(out: impl Write + Send + 'static) -> std::io::Result<(Arc<Lines>, LinesGuard)> {
    let lines = Arc::new(Lines::default());
    let writer = Arc::clone(&lines);
    let thread = std::thread::Builder::new()
        .name("basalt-log".into())
        .spawn(move || write_batches(&writer, out))?;
    Ok((
        Arc::clone(&lines),
        LinesGuard {
            lines,
            thread: Some(thread),
        },
    ))
}

/// A buffer every line bypasses: written at once by the thread that logs it (when no writer
/// thread can be started).
pub fn unbuffered() -> Arc<Lines> {
    let lines = Lines::default();
    lines.lock().stopped = true;
    Arc::new(lines)
}

/// The writer thread: once a line is waiting, it lets lines gather for an interval (or until
/// woken by a full batch), then takes them and writes them in one call. A failing output loses
/// those lines, never the process.
fn write_batches(lines: &Lines, mut out: impl Write) {
    let mut batch = Vec::with_capacity(FLUSH_BYTES);
    loop {
        let stopped = {
            let mut pending = lines.lock();
            pending.idle = true;
            while pending.bytes.is_empty() && !pending.stopped {
                pending = lines
                    .wake
                    .wait(pending)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            pending.idle = false;
            pending.rounds += 1;
            if !pending.stopped && pending.bytes.len() < FLUSH_BYTES {
                pending = lines
                    .wake
                    .wait_timeout(pending, FLUSH_INTERVAL)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            std::mem::swap(&mut pending.bytes, &mut batch);
            pending.stopped
        };
        lines.room.notify_all();
        if !batch.is_empty() {
            let _ = out.write_all(&batch).and_then(|()| out.flush());
            batch.clear();
            // A burst grew it: give the memory back rather than keep the peak.
            batch.shrink_to(FLUSH_BYTES);
        }
        if stopped {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_is_written_whole_and_in_order_by_the_time_the_guard_drops() {
        let out = Shared::default();
        let (lines, guard) = buffered(out.clone()).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let lines = Arc::clone(&lines);
                std::thread::spawn(move || {
                    for i in 0..2000 {
                        (&*lines)
                            .write_all(format!("thread {t} line {i}\n").as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(guard);
        let written = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let all: Vec<&str> = written.lines().collect();
        assert_eq!(all.len(), 8000);
        for t in 0..4 {
            let mine: Vec<&str> = all
                .iter()
                .copied()
                .filter(|l| l.starts_with(&format!("thread {t} ")))
                .collect();
            let expected: Vec<String> = (0..2000).map(|i| format!("thread {t} line {i}")).collect();
            assert_eq!(mine, expected, "thread {t}'s lines, whole and in order");
        }
    }

    #[test]
    fn lines_reach_the_output_within_the_interval_without_a_flush() {
        let out = Shared::default();
        let (lines, _guard) = buffered(out.clone()).unwrap();
        (&*lines).write_all(b"hello\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while out.0.lock().unwrap().is_empty() {
            assert!(std::time::Instant::now() < deadline, "never written");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(&*out.0.lock().unwrap(), b"hello\n");
    }

    #[test]
    fn an_idle_writer_sleeps_until_the_next_line() {
        let out = Shared::default();
        let (lines, _guard) = buffered(out.clone()).unwrap();
        // Ten intervals without a line: the writer must not have come round once.
        std::thread::sleep(FLUSH_INTERVAL * 10);
        assert_eq!(lines.lock().rounds, 0, "an idle writer woke up");
        for round in 1..=2 {
            let line = format!("line {round}\n");
            (&*lines).write_all(line.as_bytes()).unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while !String::from_utf8_lossy(&out.0.lock().unwrap()).ends_with(&line) {
                assert!(std::time::Instant::now() < deadline, "{line} never written");
                std::thread::sleep(Duration::from_millis(1));
            }
            // Written: the writer is (or soon will be) asleep again, having come round once
            // per line that found it asleep.
            std::thread::sleep(FLUSH_INTERVAL * 5);
            assert_eq!(lines.lock().rounds, round, "rounds after line {round}");
        }
    }
}
