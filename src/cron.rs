//! Cron expressions of cron triggers (`docs/scheduled-triggers.md`, "Schedules"): exactly five
//! fields (minute, hour, day of month, month, day of week), numbers only, each `*`, `n`,
//! `a-b`, a list of those, or a step (`*/s`, `a-b/s`, `n/s`), evaluated in UTC at minute
//! resolution. When both day fields are restricted (neither starts with `*`), a day matches if
//! either does, as classic cron has it. Pure: no clock, no IO.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, TimeZone, Timelike, Utc};

/// How far ahead [`Schedule::after`] looks for a match: more than eight years, so a schedule
/// on the 29th of February is found across a century year.
const HORIZON_DAYS: i64 = 3000;

/// A parsed cron expression: the allowed values of each field as bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    minutes: u64,
    hours: u32,
    /// Bits 1–31.
    days: u32,
    /// Bits 1–12.
    months: u16,
    /// Bits 0–6, 0 = Sunday.
    weekdays: u8,
    /// Whether each day field is restricted (does not start with `*`).
    days_restricted: bool,
    weekdays_restricted: bool,
}

/// Why an expression does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cron expression \"{expression}\": {reason}")]
pub struct CronError {
    pub expression: String,
    pub reason: String,
}

/// The fields in order: name, lowest and highest value.
const FIELDS: [(&str, u32, u32); 5] = [
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 6),
];

impl Schedule {
    /// Parses an expression of exactly five space-separated fields.
    pub fn parse(expression: &str) -> Result<Schedule, CronError> {
        let fail = |reason: String| CronError {
            expression: expression.to_owned(),
            reason,
        };
        let fields: Vec<&str> = expression.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(fail(format!(
                "expected 5 fields (minute hour day-of-month month day-of-week), found {}",
                fields.len()
            )));
        }
        let mut bits = [0u64; 5];
        for (i, (text, (name, low, high))) in fields.iter().zip(FIELDS).enumerate() {
            bits[i] = field(text, low, high).map_err(|e| fail(format!("{name}: {e}")))?;
        }
        Ok(Schedule {
            minutes: bits[0],
            hours: bits[1] as u32,
            days: bits[2] as u32,
            months: bits[3] as u16,
            weekdays: bits[4] as u8,
            days_restricted: !fields[2].starts_with('*'),
            weekdays_restricted: !fields[4].starts_with('*'),
        })
    }

    /// Whether the schedule fires at `t` (its seconds ignored).
    pub fn matches(&self, t: DateTime<Utc>) -> bool {
        self.day_matches(t.date_naive())
            && self.hours & (1 << t.hour()) != 0
            && self.minutes & (1 << t.minute()) != 0
    }

    fn day_matches(&self, d: NaiveDate) -> bool {
        if self.months & (1 << d.month()) == 0 {
            return false;
        }
        let day = self.days & (1 << d.day()) != 0;
        let weekday = self.weekdays & (1 << d.weekday().num_days_from_sunday()) != 0;
        match (self.days_restricted, self.weekdays_restricted) {
            (true, true) => day || weekday,
            _ => day && weekday,
        }
    }

    /// The first instant strictly after `t` at which the schedule fires (second 0), or `None`
    /// when there is none within about eight years (`0 0 30 2 *` never fires).
    pub fn after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let start = t
            .with_second(0)?
            .with_nanosecond(0)?
            .checked_add_signed(Duration::minutes(1))?;
        let first_day = start.date_naive();
        for offset in 0..HORIZON_DAYS {
            let day = first_day.checked_add_signed(Duration::days(offset))?;
            if !self.day_matches(day) {
                continue;
            }
            let (from_hour, from_minute) = match offset {
                0 => (start.hour(), start.minute()),
                _ => (0, 0),
            };
            let mut lowest_hour = from_hour;
            while let Some(hour) = next_bit(u64::from(self.hours), lowest_hour) {
                let lowest_minute = match offset == 0 && hour == from_hour {
                    true => from_minute,
                    false => 0,
                };
                if let Some(minute) = next_bit(self.minutes, lowest_minute) {
                    let time = NaiveTime::from_hms_opt(hour, minute, 0)?;
                    return Some(Utc.from_utc_datetime(&day.and_time(time)));
                }
                lowest_hour = hour + 1;
            }
        }
        None
    }

    /// The `count` instants after `t` at which it fires, in order (fewer when it stops).
    pub fn upcoming(&self, t: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::with_capacity(count);
        let mut at = t;
        while out.len() < count {
            match self.after(at) {
                Some(next) => {
                    out.push(next);
                    at = next;
                }
                None => break,
            }
        }
        out
    }
}

/// The lowest set bit of `mask` at `from` or above.
fn next_bit(mask: u64, from: u32) -> Option<u32> {
    if from >= 64 {
        return None;
    }
    let rest = mask >> from;
    (rest != 0).then(|| from + rest.trailing_zeros())
}

/// The values one field allows, as bits.
fn field(text: &str, low: u32, high: u32) -> Result<u64, String> {
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => (range, Some(number(step)?)),
            None => (part, None),
        };
        let (from, to) = match range {
            "*" => (low, high),
            _ => match range.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                // `n/s` runs from n to the end of the range.
                None if step.is_some() => (number(range)?, high),
                None => {
                    let n = number(range)?;
                    (n, n)
                }
            },
        };
        if from < low || to > high {
            return Err(format!("{part} is outside {low}-{high}"));
        }
        if from > to {
            return Err(format!("{part} is a range that runs backwards"));
        }
        let step = match step {
            Some(0) => return Err(format!("{part} has a step of 0")),
            Some(s) => s,
            None => 1,
        };
        let mut v = from;
        while v <= to {
            bits |= 1 << v;
            match v.checked_add(step) {
                Some(next) => v = next,
                None => break,
            }
        }
    }
    Ok(bits)
}

/// A decimal number: digits only (no names, `?`, `L`, `W` or `#`).
fn number(text: &str) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "\"{text}\" is not a number, *, a range, a list or a step"
        ));
    }
    text.parse().map_err(|_| format!("\"{text}\" is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    fn next(expr: &str, from: &str) -> Option<String> {
        Schedule::parse(expr)
            .unwrap()
            .after(at(from))
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
    }

    #[test]
    fn finds_the_next_match_strictly_after() {
        assert_eq!(
            next("* * * * *", "2026-03-05T22:00:00Z").as_deref(),
            Some("2026-03-05T22:01:00Z")
        );
        assert_eq!(
            next("* * * * *", "2026-03-05T22:00:30Z").as_deref(),
            Some("2026-03-05T22:01:00Z")
        );
        // Weekdays at 22:00: Thursday the 5th, then Friday, then Monday.
        assert_eq!(
            next("0 22 * * 1-5", "2026-03-05T22:00:00Z").as_deref(),
            Some("2026-03-06T22:00:00Z")
        );
        assert_eq!(
            next("0 22 * * 1-5", "2026-03-06T22:00:00Z").as_deref(),
            Some("2026-03-09T22:00:00Z")
        );
        assert_eq!(
            next("*/15 9-17/4 * * *", "2026-01-01T13:50:00Z").as_deref(),
            Some("2026-01-01T17:00:00Z")
        );
        assert_eq!(
            next("0 0 29 2 *", "2097-01-01T00:00:00Z").as_deref(),
            Some("2104-02-29T00:00:00Z")
        );
        assert_eq!(next("0 0 30 2 *", "2026-01-01T00:00:00Z"), None);
        // Both day fields restricted: either matches (the 1st, or any Monday).
        assert_eq!(
            next("0 12 1 * 1", "2026-03-02T12:00:00Z").as_deref(),
            Some("2026-03-09T12:00:00Z")
        );
        assert_eq!(
            next("0 12 1 * 1", "2026-03-30T12:00:00Z").as_deref(),
            Some("2026-04-01T12:00:00Z")
        );
    }

    #[test]
    fn refuses_what_is_not_five_numeric_fields() {
        for bad in [
            "* * * *",
            "* * * * * *",
            "@daily",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 7",
            "* * * JAN *",
            "* * * * MON",
            "* * ? * *",
            "* * L * *",
            "* * 15W * *",
            "* * * * 1#2",
            "*/0 * * * *",
            "5-1 * * * *",
            "1,,2 * * * *",
            "",
        ] {
            assert!(Schedule::parse(bad).is_err(), "{bad:?} parsed");
        }
        let err = Schedule::parse("* * * JAN *").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid cron expression \"* * * JAN *\": month: \"JAN\" is not a number, *, a range, a list or a step"
        );
    }
}
