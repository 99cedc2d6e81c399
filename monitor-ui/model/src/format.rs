//! Durations, ages and byte sizes as short text for a dense dashboard.

/// A duration in milliseconds: `850 ms`, `12.3 s`, `4m 05s`, `2h 03m`, `3d 04h`.
pub fn duration_ms(ms: u64) -> String {
    const MINUTE: u64 = 60_000;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..MINUTE => format!("{}.{} s", ms / 1000, ms % 1000 / 100),
        MINUTE..HOUR => format!("{}m {:02}s", ms / MINUTE, ms % MINUTE / 1000),
        HOUR..DAY => format!("{}h {:02}m", ms / HOUR, ms % HOUR / MINUTE),
        _ => format!("{}d {:02}h", ms / DAY, ms % DAY / HOUR),
    }
}

/// Whole seconds (an uptime, a time since last use): `0 s`, `17 s`, then as [`duration_ms`].
pub fn duration_secs(secs: u64) -> String {
    if secs < 60 {
        format!("{secs} s")
    } else {
        duration_ms(secs.saturating_mul(1000))
    }
}

/// Fractional seconds (a worker's busy time); negative or NaN reads as zero.
pub fn duration_secs_f64(secs: f64) -> String {
    let ms = if secs.is_finite() && secs > 0.0 {
        (secs * 1000.0).round() as u64
    } else {
        0
    };
    duration_ms(ms)
}

/// Bytes in binary units with three significant digits: `512 B`, `1.50 KiB`, `12.3 GiB`, `184 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let unit = UNITS[unit];
    if value < 10.0 {
        format!("{value:.2} {unit}")
    } else if value < 100.0 {
        format!("{value:.1} {unit}")
    } else {
        format!("{value:.0} {unit}")
    }
}

/// `part` as a percentage of `whole`, clamped to 0–100 (0 when `whole` is 0).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 * 100.0 / whole as f64).clamp(0.0, 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_the_unit_that_keeps_them_short() {
        let cases = [
            (0, "0 ms"),
            (999, "999 ms"),
            (1_000, "1.0 s"),
            (12_345, "12.3 s"),
            (59_999, "59.9 s"),
            (60_000, "1m 00s"),
            (245_000, "4m 05s"),
            (3_600_000, "1h 00m"),
            (7_380_000, "2h 03m"),
            (86_400_000, "1d 00h"),
            (273_600_000, "3d 04h"),
        ];
        for (ms, text) in cases {
            assert_eq!(duration_ms(ms), text, "{ms} ms");
        }
    }

    #[test]
    fn seconds_and_fractional_seconds_share_the_format() {
        assert_eq!(duration_secs(0), "0 s");
        assert_eq!(duration_secs(17), "17 s");
        assert_eq!(duration_secs(65), "1m 05s");
        assert_eq!(duration_secs(u64::MAX), duration_ms(u64::MAX));
        assert_eq!(duration_secs_f64(3.25), "3.2 s");
        assert_eq!(duration_secs_f64(0.4), "400 ms");
        assert_eq!(duration_secs_f64(-1.0), "0 ms");
        assert_eq!(duration_secs_f64(f64::NAN), "0 ms");
    }

    #[test]
    fn bytes_use_binary_units_with_three_digits() {
        let cases = [
            (0, "0 B"),
            (1023, "1023 B"),
            (1536, "1.50 KiB"),
            (184 * 1024 * 1024, "184 MiB"),
            (13_600 * 1024 * 1024, "13.3 GiB"),
            (512 * 1024 * 1024 * 1024, "512 GiB"),
        ];
        for (n, text) in cases {
            assert_eq!(bytes(n), text, "{n} bytes");
        }
    }

    #[test]
    fn percent_is_clamped_and_safe_on_an_empty_whole() {
        assert_eq!(percent(1, 4), 25.0);
        assert_eq!(percent(5, 4), 100.0);
        assert_eq!(percent(5, 0), 0.0);
    }
}
