//! RFC 3339 timestamps at millisecond precision, the form both wire
//! versions send, written without `core::fmt`.
//!
//! Every status a stream sends carries one. Written by chrono (its serde
//! form and `to_rfc3339_opts` go through `fmt::Display`), one cost about
//! 2,400 instructions, more than the rest of a `working` status; this
//! writes the same text from the date's and time's fields into a stack
//! buffer. Dates chrono writes in another shape (years outside 0..=9999,
//! leap seconds) are left to chrono, and the tests hold the two to the same
//! text.

use chrono::{DateTime, Datelike, SecondsFormat, SubsecRound, Timelike, Utc};

/// Whether a whole second gets `.000` (`Always`, the 0.3 form:
/// `SecondsFormat::Millis`) or no fraction (`WhenNonZero`, the 1.0 form:
/// chrono's serde form of a time cut to milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Millis {
    Always,
    WhenNonZero,
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, the longest text written here.
const LONGEST: usize = 24;

/// Writes `t` cut to milliseconds into `buf`; `None` where chrono writes
/// another shape.
fn write(t: &DateTime<Utc>, millis: Millis, buf: &mut [u8; LONGEST]) -> Option<usize> {
    let (date, time) = (t.date_naive(), t.time());
    let year = u32::try_from(date.year()).ok().filter(|y| *y <= 9999)?;
    let nanos = time.nanosecond();
    if nanos >= 1_000_000_000 {
        return None; // a leap second
    }
    let mut at = 0;
    let mut digits = |n: u32, width: u32, sep: Option<u8>| {
        for i in (0..width).rev() {
            buf[at] = b'0' + (n / 10u32.pow(i) % 10) as u8;
            at += 1;
        }
        if let Some(sep) = sep {
            buf[at] = sep;
            at += 1;
        }
    };
    digits(year, 4, Some(b'-'));
    digits(date.month(), 2, Some(b'-'));
    digits(date.day(), 2, Some(b'T'));
    digits(time.hour(), 2, Some(b':'));
    digits(time.minute(), 2, Some(b':'));
    let ms = nanos / 1_000_000;
    let fraction = millis == Millis::Always || ms != 0;
    digits(time.second(), 2, fraction.then_some(b'.'));
    if fraction {
        digits(ms, 3, None);
    }
    buf[at] = b'Z';
    Some(at + 1)
}

/// `t` as a string (the 0.3 wire's `timestamp` field).
pub(crate) fn to_string(t: &DateTime<Utc>, millis: Millis) -> String {
    let mut buf = [0; LONGEST];
    match write(t, millis, &mut buf) {
        // Only ASCII digits and separators were written.
        Some(n) => String::from_utf8_lossy(&buf[..n]).into_owned(),
        None => chrono_text(t, millis),
    }
}

/// What chrono writes for `t` cut to milliseconds.
fn chrono_text(t: &DateTime<Utc>, millis: Millis) -> String {
    match millis {
        Millis::Always => t.to_rfc3339_opts(SecondsFormat::Millis, true),
        Millis::WhenNonZero => t
            .trunc_subsecs(3)
            .to_rfc3339_opts(SecondsFormat::AutoSi, true),
    }
}

/// Writes `t` cut to milliseconds as a JSON string at the end of `out`.
pub(crate) fn write_json(out: &mut Vec<u8>, t: &DateTime<Utc>, millis: Millis) {
    let mut buf = [0; LONGEST];
    match write(t, millis, &mut buf) {
        Some(n) => {
            out.push(b'"');
            out.extend_from_slice(&buf[..n]);
            out.push(b'"');
        }
        None => super::json::string(out, &chrono_text(t, millis)),
    }
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, TimeZone};

    use super::*;

    fn samples() -> Vec<DateTime<Utc>> {
        let mut times = vec![
            Utc::now(),
            Utc.with_ymd_and_hms(2026, 11, 24, 21, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(1970, 1, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(2024, 2, 29, 23, 59, 59).unwrap(),
            Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).unwrap(),
            Utc.with_ymd_and_hms(10_000, 1, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(0, 1, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(-1, 6, 15, 12, 30, 5).unwrap(),
            // A leap second.
            NaiveDate::from_ymd_opt(2016, 12, 31)
                .unwrap()
                .and_hms_nano_opt(23, 59, 59, 1_500_000_000)
                .unwrap()
                .and_utc(),
        ];
        // Every millisecond pattern, and nanoseconds below a millisecond.
        let base = Utc.with_ymd_and_hms(2001, 9, 9, 1, 46, 40).unwrap();
        for nanos in [
            1,
            999_999,
            1_000_000,
            10_000_000,
            120_000_000,
            999_999_999,
            5_432_100,
        ] {
            times.push(base + chrono::Duration::nanoseconds(nanos));
        }
        for secs in (0..400 * 366 * 86_400_i64).step_by(7_919_993) {
            times.push(
                base + chrono::Duration::seconds(secs)
                    + chrono::Duration::milliseconds(secs % 1000),
            );
        }
        times
    }

    #[test]
    fn the_text_is_the_one_chrono_writes_in_both_forms() {
        for t in samples() {
            assert_eq!(
                to_string(&t, Millis::Always),
                t.to_rfc3339_opts(SecondsFormat::Millis, true)
            );
            let typed = serde_json::to_vec(&t.trunc_subsecs(3)).unwrap();
            let mut direct = Vec::new();
            write_json(&mut direct, &t, Millis::WhenNonZero);
            assert_eq!(direct, typed, "{t:?}");
            let mut always = Vec::new();
            write_json(&mut always, &t, Millis::Always);
            assert_eq!(
                always,
                serde_json::to_vec(&to_string(&t, Millis::Always)).unwrap()
            );
        }
    }

    #[test]
    fn a_whole_second_has_a_fraction_only_in_the_always_form() {
        let t = Utc.with_ymd_and_hms(2026, 11, 24, 21, 0, 5).unwrap();
        assert_eq!(to_string(&t, Millis::Always), "2026-11-24T21:00:05.000Z");
        assert_eq!(to_string(&t, Millis::WhenNonZero), "2026-11-24T21:00:05Z");
        let t = t + chrono::Duration::microseconds(42_999);
        assert_eq!(
            to_string(&t, Millis::WhenNonZero),
            "2026-11-24T21:00:05.042Z"
        );
    }
}
