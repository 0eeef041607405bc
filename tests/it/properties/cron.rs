//! Cron schedules against a brute-force reading of the same expression: for expressions built
//! from every allowed form, the next instant the parser finds after `t` is a whole minute
//! after `t` at which the expression matches, and no minute in between matches.

use basalt::cron::Schedule;
use chrono::{DateTime, Datelike, Duration, TimeZone, Timelike, Utc};
use proptest::prelude::*;

/// One field's text within `low..=high`: `*`, a number, a range, a step, or a list of them.
fn field(low: u32, high: u32) -> impl Strategy<Value = String> {
    let one = prop_oneof![
        Just("*".to_owned()),
        (low..=high).prop_map(|n| n.to_string()),
        (low..=high, low..=high).prop_map(|(a, b)| format!("{}-{}", a.min(b), a.max(b))),
        (1u32..=(high - low + 1)).prop_map(|s| format!("*/{s}")),
        (low..=high, 1u32..=6).prop_map(|(a, s)| format!("{a}/{s}")),
    ];
    proptest::collection::vec(one, 1..=3).prop_map(|parts| parts.join(","))
}

fn expression() -> impl Strategy<Value = String> {
    (
        field(0, 59),
        field(0, 23),
        field(1, 31),
        field(1, 12),
        field(0, 6),
    )
        .prop_map(|(m, h, dom, mon, dow)| format!("{m} {h} {dom} {mon} {dow}"))
}

/// Whether `value` is one of the values `text` allows, read independently of the parser.
fn allows(text: &str, value: u32, low: u32, high: u32) -> bool {
    text.split(',').any(|part| {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, s.parse::<u32>().unwrap()),
            None => (part, 1),
        };
        let (from, to) = match (range, range.split_once('-')) {
            ("*", _) => (low, high),
            (_, Some((a, b))) => (a.parse().unwrap(), b.parse().unwrap()),
            (n, None) if part.contains('/') => (n.parse().unwrap(), high),
            (n, None) => (n.parse().unwrap(), n.parse().unwrap()),
        };
        value >= from && value <= to && (value - from).is_multiple_of(step)
    })
}

fn matches(expr: &str, t: DateTime<Utc>) -> bool {
    let f: Vec<&str> = expr.split(' ').collect();
    let day = allows(f[2], t.day(), 1, 31);
    let weekday = allows(f[4], t.weekday().num_days_from_sunday(), 0, 6);
    let days = match (f[2].starts_with('*'), f[4].starts_with('*')) {
        (false, false) => day || weekday,
        _ => day && weekday,
    };
    days && allows(f[0], t.minute(), 0, 59)
        && allows(f[1], t.hour(), 0, 23)
        && allows(f[3], t.month(), 1, 12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn the_next_instant_is_the_first_minute_that_matches(
        expr in expression(),
        offset in 0i64..(4 * 365 * 24 * 60),
        second in 0u32..60,
    ) {
        let schedule = Schedule::parse(&expr).unwrap();
        let start = Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, second).unwrap() + Duration::minutes(offset);
        let next = schedule.after(start);
        // Minute by minute up to the answer, or for a year and a day when there is none
        // (a schedule the brute force finds within that must be found by the parser).
        let mut t = start.with_second(0).unwrap() + Duration::minutes(1);
        let limit = next.unwrap_or(start + Duration::days(366));
        while t < limit {
            prop_assert!(!matches(&expr, t), "{expr}: {t} matches before {next:?}");
            t += Duration::minutes(1);
        }
        if let Some(next) = next {
            prop_assert!(next > start);
            prop_assert_eq!(next.second(), 0);
            prop_assert!(matches(&expr, next), "{expr}: {next} does not match");
            prop_assert!(schedule.matches(next));
        }
    }
}
