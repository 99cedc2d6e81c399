//! A device's readings as the worker chips show them: only what the device reported, each with
//! its own label, so an absent reading is left out rather than drawn as zero.

use snarkd_proto::v1::DeviceTelemetry;

use crate::format;

/// One reading: what it is (`warming`, `utilization`, `memory`, `temperature`, `power`, `pool`)
/// and its text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reading {
    pub what: &'static str,
    pub text: String,
}

/// The readings of `device` in the order the chip shows them.
pub fn readings(device: &DeviceTelemetry) -> Vec<Reading> {
    let of = |used: Option<u64>, total: Option<u64>| {
        Some(format!(
            "{} of {}",
            format::bytes(used?),
            format::bytes(total?)
        ))
    };
    [
        (
            "warming",
            device.warming.as_ref().map(|w| format!("warming: {w}")),
        ),
        (
            "utilization",
            device.utilization_percent.map(|p| format!("{p} % busy")),
        ),
        (
            "memory",
            of(device.memory_used_bytes, device.memory_total_bytes).map(|m| format!("{m} memory")),
        ),
        (
            "temperature",
            device.temperature_celsius.map(|c| format!("{c} °C")),
        ),
        (
            "power",
            device
                .power_milliwatts
                .map(|mw| format!("{:.0} W", f64::from(mw) / 1000.0)),
        ),
        (
            "pool",
            of(device.pool_used_bytes, device.pool_limit_bytes).map(|p| format!("pool {p}")),
        ),
    ]
    .into_iter()
    .filter_map(|(what, text)| Some(Reading { what, text: text? }))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_the_device_reported_is_shown_and_a_zero_is_a_reading() {
        let gpu = DeviceTelemetry {
            device_ordinal: 0,
            utilization_percent: Some(0),
            memory_used_bytes: Some(41 << 30),
            memory_total_bytes: Some(80 << 30),
            temperature_celsius: Some(64),
            power_milliwatts: Some(310_400),
            pool_used_bytes: Some(12 << 30),
            pool_limit_bytes: Some(76 << 30),
            warming: None,
        };
        let texts: Vec<(&str, String)> = readings(&gpu)
            .into_iter()
            .map(|r| (r.what, r.text))
            .collect();
        assert_eq!(
            texts,
            [
                ("utilization", "0 % busy".to_string()),
                ("memory", "41.0 GiB of 80.0 GiB memory".to_string()),
                ("temperature", "64 °C".to_string()),
                ("power", "310 W".to_string()),
                ("pool", "pool 12.0 GiB of 76.0 GiB".to_string()),
            ]
        );
        // PoCL's CPU device: no NVML, only snarkd's pool.
        let pool_only = DeviceTelemetry {
            pool_used_bytes: Some(0),
            pool_limit_bytes: Some(4 << 30),
            ..Default::default()
        };
        let whats: Vec<&str> = readings(&pool_only).iter().map(|r| r.what).collect();
        assert_eq!(whats, ["pool"]);
        // A used figure without its total says nothing on its own.
        let half = DeviceTelemetry {
            memory_used_bytes: Some(1),
            ..Default::default()
        };
        assert!(readings(&half).is_empty());
        // A device being set up says so first.
        let warming = DeviceTelemetry {
            warming: Some("building or loading its kernels".into()),
            ..pool_only
        };
        let texts: Vec<String> = readings(&warming).into_iter().map(|r| r.text).collect();
        assert_eq!(
            texts,
            [
                "warming: building or loading its kernels",
                "pool 0 B of 4.00 GiB"
            ]
        );
    }
}
