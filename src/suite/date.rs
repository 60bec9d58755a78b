//! The suite's timestamp: UTC ISO 8601 from the system clock, std only.

use std::time::{SystemTime, UNIX_EPOCH};

/// UTC `YYYY-MM-DDTHH:MM:SSZ` of now (the epoch if the clock is before it).
pub(super) fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    utc_iso8601(secs)
}

/// UTC `YYYY-MM-DDTHH:MM:SSZ` of `secs` seconds since 1970-01-01T00:00:00Z.
fn utc_iso8601(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The proleptic Gregorian `(year, month, day)` of `days` since 1970-01-01
/// (H. Hinnant's `civil_from_days`: eras of 400 years, years starting in
/// March so that the leap day is the last of its year).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_an_iso_date() {
        let d = utc_now();
        assert_eq!(d.len(), 20, "{d}");
        assert!(d.starts_with("20"), "{d}");
    }

    /// Reference values from Python's `datetime.fromtimestamp(s, utc)`:
    /// the epoch, leap days (2000 is a leap year, 2100 is not), the day
    /// before the epoch and the last second of year 9999.
    #[test]
    fn dates_match_a_reference_calendar() {
        for (secs, want) in [
            (0, "1970-01-01T00:00:00Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (1_709_251_199, "2024-02-29T23:59:59Z"),
            (4_107_542_400, "2100-03-01T00:00:00Z"),
            (-86_400, "1969-12-31T00:00:00Z"),
            (253_402_300_799, "9999-12-31T23:59:59Z"),
        ] {
            assert_eq!(utc_iso8601(secs), want, "{secs}");
        }
    }
}
