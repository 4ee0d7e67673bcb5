//! RFC 3339 timestamps read into microseconds since the Unix epoch, to compare status
//! times (`ListTasks`' `statusTimestampAfter`, its ordering). Hand-written: the crate needs
//! one parse of one format, which the date crates would add a dependency for.

/// Microseconds since 1970-01-01T00:00:00Z of an RFC 3339 date-time
/// (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, `t`/`z` and a space as the separator
/// accepted), or `None` when it is not one.
pub(crate) fn parse_micros(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let s = text.get(from..to)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())
            .flatten()
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    // 60: a leap second, read as the next second's start.
    if second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut micros = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        for (i, c) in frac.bytes().take(digits).enumerate() {
            if i < 6 {
                micros = micros * 10 + i64::from(c - b'0');
            }
        }
        for _ in digits..6 {
            micros *= 10;
        }
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let o = rest.as_bytes();
            if o.len() != 6 || o[3] != b':' || !matches!(o[0], b'+' | b'-') {
                return None;
            }
            let hh: i64 = rest.get(1..3)?.parse().ok()?;
            let mm: i64 = rest.get(4..6)?.parse().ok()?;
            if hh > 23 || mm > 59 {
                return None;
            }
            let sign = if o[0] == b'-' { -1 } else { 1 };
            sign * (hh * 3600 + mm * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some(secs * 1_000_000 + micros)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epoch_and_offsets() {
        assert_eq!(parse_micros("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_micros("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(parse_micros("1970-01-01T00:00:01.5Z"), Some(1_500_000));
        assert_eq!(
            parse_micros("2026-11-28T23:13:07.976134Z"),
            Some(1_795_907_587_976_134)
        );
        assert_eq!(
            parse_micros("2000-02-29T00:00:00.123456789Z"),
            Some(951_782_400_123_456)
        );
    }

    #[test]
    fn what_is_not_a_date_time() {
        for bad in [
            "",
            "2026-11-28",
            "2026-13-01T00:00:00Z",
            "2026-11-28T24:00:00Z",
            "2026-11-28T00:00:00",
            "2026-11-28T00:00:00.Z",
            "2026-11-28T00:00:00+1:00",
            "２026-11-28T00:00:00Z",
            "+026-11-28T00:00:00Z",
        ] {
            assert_eq!(parse_micros(bad), None, "{bad}");
        }
    }

    #[test]
    fn now_reads_back() {
        let now = crate::types::now_rfc3339();
        assert!(
            parse_micros(&now).is_some_and(|m| m > 1_700_000_000_000_000),
            "{now}"
        );
    }
}
