//! The rate limiter of one engine process: per key, the times of the operations admitted in
//! the last [`WINDOW`] (a sliding window). An operation is admitted while fewer than the
//! key's budget were admitted in the window; refused operations are not counted. Counts live
//! in memory only, so each replica counts its own (`docs/limits.md` says why). The caller
//! passes the time, so tests need no sleeping.
//!
//! Memory is bounded: a key keeps at most its budget of times, and keys whose last admission
//! left the window are dropped by a sweep of their shard once per window.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How far back admitted operations count.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Independently locked parts of the key space, so that requests of different keys rarely
/// wait for each other.
const SHARDS: usize = 16;

/// The counts of one process.
#[derive(Debug)]
pub struct RateLimiter {
    shards: Vec<Mutex<Shard>>,
}

impl Default for RateLimiter {
    fn default() -> Self {
        RateLimiter {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
}

#[derive(Debug, Default)]
struct Shard {
    /// The times of each key's admitted operations in the window, oldest first.
    keys: HashMap<String, VecDeque<Instant>>,
    /// When idle keys were last dropped.
    swept: Option<Instant>,
}

/// What one key asks for: `count` operations against a budget of `max` per window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub key: String,
    pub max: u32,
    pub count: u32,
}

/// The answer to a request's asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every ask was admitted and counted. `limit` and `remaining` are those of the ask with
    /// the least left.
    Admitted { limit: u32, remaining: u32 },
    /// Nothing was counted: the ask with budget `limit` did not fit, and will not before
    /// `retry_after` whole seconds (at least 1) have passed.
    Refused { limit: u32, retry_after: u64 },
}

impl RateLimiter {
    /// Admits all of `asks` (each a different key) at `now`, or none of them.
    pub fn admit(&self, asks: &[Ask], now: Instant) -> Verdict {
        let mut shards: Vec<usize> = asks.iter().map(|ask| shard_of(&ask.key)).collect();
        shards.sort_unstable();
        shards.dedup();
        // Locked in one order, so two requests never wait for each other's shard.
        let mut locked: Vec<(usize, std::sync::MutexGuard<'_, Shard>)> = shards
            .into_iter()
            .filter_map(|i| {
                let shard = self.shards.get(i)?;
                Some((i, shard.lock().unwrap_or_else(|p| p.into_inner())))
            })
            .collect();
        for (_, shard) in &mut locked {
            shard.sweep(now);
        }
        let mut tightest: Option<(u32, u32)> = None;
        for ask in asks {
            let Some(shard) = shard_for(&mut locked, &ask.key) else {
                continue;
            };
            let times = shard.keys.get_mut(&ask.key);
            let used = match times {
                Some(times) => {
                    forget_old(times, now);
                    times.len()
                }
                None => 0,
            };
            let max = usize::try_from(ask.max).unwrap_or(usize::MAX);
            let count = usize::try_from(ask.count).unwrap_or(usize::MAX);
            if used.saturating_add(count) > max {
                let times = shard.keys.get(&ask.key);
                return Verdict::Refused {
                    limit: ask.max,
                    retry_after: retry_after(times, used + count - max, now),
                };
            }
            let remaining = u32::try_from(max - used - count).unwrap_or(u32::MAX);
            if tightest.is_none_or(|(_, left)| remaining < left) {
                tightest = Some((ask.max, remaining));
            }
        }
        for ask in asks {
            if let Some(shard) = shard_for(&mut locked, &ask.key) {
                let times = shard.keys.entry(ask.key.clone()).or_default();
                times.extend(std::iter::repeat_n(now, ask.count as usize));
            }
        }
        let (limit, remaining) = tightest.unwrap_or((0, 0));
        Verdict::Admitted { limit, remaining }
    }

    /// How many keys are counted (idle ones not yet swept included).
    pub fn keys(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|p| p.into_inner()).keys.len())
            .sum()
    }
}

impl Shard {
    /// Drops the keys whose every admission left the window, at most once per window.
    fn sweep(&mut self, now: Instant) {
        if self
            .swept
            .is_some_and(|at| now.saturating_duration_since(at) < WINDOW)
        {
            return;
        }
        self.swept = Some(now);
        self.keys.retain(|_, times| {
            times
                .back()
                .is_some_and(|last| now.saturating_duration_since(*last) < WINDOW)
        });
    }
}

/// The shard of `key` among the locked ones.
fn shard_for<'a, 'g>(
    locked: &'a mut [(usize, std::sync::MutexGuard<'g, Shard>)],
    key: &str,
) -> Option<&'a mut Shard> {
    let i = shard_of(key);
    locked
        .iter_mut()
        .find(|(at, _)| *at == i)
        .map(|(_, guard)| &mut **guard)
}

fn shard_of(key: &str) -> usize {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
    (hash % SHARDS as u64) as usize
}

/// Forgets the times that left the window.
fn forget_old(times: &mut VecDeque<Instant>, now: Instant) {
    while times
        .front()
        .is_some_and(|t| now.saturating_duration_since(*t) >= WINDOW)
    {
        times.pop_front();
    }
}

/// Whole seconds (at least 1) until `free` more of `times` have left the window: for one
/// operation, until the oldest leaves.
fn retry_after(times: Option<&VecDeque<Instant>>, free: usize, now: Instant) -> u64 {
    let leaving = times.and_then(|times| {
        let last = times.len().checked_sub(1)?;
        times.get(free.saturating_sub(1).min(last)).copied()
    });
    let wait = match leaving {
        Some(at) => (at + WINDOW).saturating_duration_since(now),
        None => WINDOW,
    };
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    seconds.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(key: &str, max: u32, count: u32) -> Ask {
        Ask {
            key: key.to_owned(),
            max,
            count,
        }
    }

    #[test]
    fn a_budget_is_spent_then_refused_until_the_oldest_leaves_the_window() {
        let limiter = RateLimiter::default();
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let one = [ask("user", 2, 1)];
        assert_eq!(
            limiter.admit(&one, at(0)),
            Verdict::Admitted {
                limit: 2,
                remaining: 1
            }
        );
        assert_eq!(
            limiter.admit(&one, at(10_000)),
            Verdict::Admitted {
                limit: 2,
                remaining: 0
            }
        );
        // The oldest leaves at 60 s: 29.5 s from now, rounded up.
        assert_eq!(
            limiter.admit(&one, at(30_500)),
            Verdict::Refused {
                limit: 2,
                retry_after: 30
            }
        );
        // Refused operations are not counted: at 60 s exactly the oldest has left.
        assert_eq!(
            limiter.admit(&one, at(60_000)),
            Verdict::Admitted {
                limit: 2,
                remaining: 0
            }
        );
        // Just before the second leaves: at least one second.
        assert_eq!(
            limiter.admit(&one, at(69_999)),
            Verdict::Refused {
                limit: 2,
                retry_after: 1
            }
        );
        assert!(matches!(
            limiter.admit(&one, at(70_000)),
            Verdict::Admitted { .. }
        ));
    }

    #[test]
    fn a_batch_is_admitted_or_refused_whole() {
        let limiter = RateLimiter::default();
        let t0 = Instant::now();
        assert_eq!(
            limiter.admit(&[ask("k", 5, 3)], t0),
            Verdict::Admitted {
                limit: 5,
                remaining: 2
            }
        );
        let later = t0 + Duration::from_secs(1);
        // Three more do not fit, so none is counted and two still do.
        assert!(matches!(
            limiter.admit(&[ask("k", 5, 3)], later),
            Verdict::Refused { limit: 5, .. }
        ));
        assert_eq!(
            limiter.admit(&[ask("k", 5, 2)], later),
            Verdict::Admitted {
                limit: 5,
                remaining: 0
            }
        );
        // A batch larger than the budget never fits.
        assert!(matches!(
            limiter.admit(&[ask("other", 2, 3)], later),
            Verdict::Refused { limit: 2, .. }
        ));
    }

    #[test]
    fn several_keys_are_admitted_together_or_not_at_all() {
        let limiter = RateLimiter::default();
        let t0 = Instant::now();
        limiter.admit(&[ask("b", 1, 1)], t0);
        // "b" is full, so "a" is not counted either.
        assert!(matches!(
            limiter.admit(&[ask("a", 3, 1), ask("b", 1, 1)], t0),
            Verdict::Refused { limit: 1, .. }
        ));
        assert_eq!(
            limiter.admit(&[ask("a", 3, 1), ask("c", 5, 1)], t0),
            Verdict::Admitted {
                limit: 3,
                remaining: 2
            }
        );
    }

    #[test]
    fn keys_are_apart_and_idle_ones_are_dropped() {
        let limiter = RateLimiter::default();
        let t0 = Instant::now();
        for i in 0..100 {
            let verdict = limiter.admit(&[ask(&format!("ip-{i}"), 1, 1)], t0);
            assert!(matches!(verdict, Verdict::Admitted { remaining: 0, .. }));
        }
        assert_eq!(limiter.keys(), 100);
        // A minute later every shard a request touches sweeps its idle keys; asking for
        // each key again touches every shard.
        let later = t0 + WINDOW;
        for i in 0..100 {
            limiter.admit(&[ask(&format!("again-{i}"), 1, 1)], later);
        }
        assert_eq!(limiter.keys(), 100, "only the new keys are left");
    }
}
