//! The agent container's memory and CPU, read from its cgroup (v2, else v1) and sent
//! with the reports the shim writes anyway: no write of its own. CPU is the average
//! since the last report; memory growth is a streak of reports none of which fell.

use std::path::{Path, PathBuf};
use std::time::Instant;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::kinds::agent::ResourceUse;

/// One reading of the cgroup.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub memory: u64,
    /// None: no limit.
    pub limit: Option<u64>,
    /// CPU time used so far, in microseconds.
    pub cpu_micros: u64,
}

/// Where the container's cgroup files are, and what came of the last reading.
pub struct Meter {
    root: PathBuf,
    last: Option<(Sample, Instant)>,
    growing_since: Option<Timestamp>,
}

impl Meter {
    pub fn new(root: impl Into<PathBuf>) -> Meter {
        Meter {
            root: root.into(),
            last: None,
            growing_since: None,
        }
    }

    /// Reads the cgroup now; None where it cannot be read (not in a container).
    pub fn read(&mut self, now: Timestamp) -> Option<ResourceUse> {
        let sample = read(&self.root)?;
        let at = Instant::now();
        let (use_, growing_since) = measure(self.last, sample, at, self.growing_since, now);
        self.last = Some((sample, at));
        self.growing_since = growing_since;
        Some(use_)
    }
}

/// What one sample says beside the one before it (at `then`): CPU in millicores over
/// the time between, and since when memory has not fallen (a streak starts at the first
/// rise and ends at the first fall).
pub fn measure(
    before: Option<(Sample, Instant)>,
    sample: Sample,
    at: Instant,
    growing_since: Option<Timestamp>,
    now: Timestamp,
) -> (ResourceUse, Option<Timestamp>) {
    let cpu_millicores = before.and_then(|(earlier, then)| {
        let micros = at.duration_since(then).as_micros() as u64;
        (micros > 0).then(|| sample.cpu_micros.saturating_sub(earlier.cpu_micros) * 1000 / micros)
    });
    let growing_since = match before.map(|(earlier, _)| earlier.memory) {
        Some(earlier) if sample.memory > earlier => growing_since.or(Some(now)),
        Some(earlier) if sample.memory == earlier => growing_since,
        _ => None,
    };
    let use_ = ResourceUse {
        memory_bytes: sample.memory as i64,
        memory_limit_bytes: sample.limit.map(|l| l as i64),
        cpu_millicores: cpu_millicores.map(|c| c as i64),
        memory_growing_since: growing_since.map(Time),
    };
    (use_, growing_since)
}

/// Reads cgroup v2 files under `root`, else v1's.
pub fn read(root: &Path) -> Option<Sample> {
    let text = |path: &str| std::fs::read_to_string(root.join(path)).ok();
    if let Some(memory) = text("memory.current") {
        return Some(Sample {
            memory: memory.trim().parse().ok()?,
            limit: text("memory.max").and_then(|m| limit(&m)),
            cpu_micros: text("cpu.stat").and_then(|s| usage_micros(&s)).unwrap_or(0),
        });
    }
    Some(Sample {
        memory: text("memory/memory.usage_in_bytes")?.trim().parse().ok()?,
        limit: text("memory/memory.limit_in_bytes").and_then(|m| limit(&m)),
        cpu_micros: text("cpuacct/cpuacct.usage")
            .and_then(|n| n.trim().parse::<u64>().ok())
            .map_or(0, |nanos| nanos / 1000),
    })
}

/// A memory limit as cgroups write it: `max` (v2), or a page-rounded maximum (v1) that
/// means none.
fn limit(text: &str) -> Option<u64> {
    let value: u64 = text.trim().parse().ok()?;
    (value < 1 << 62).then_some(value)
}

/// `usage_usec` of a v2 `cpu.stat`.
fn usage_micros(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|line| line.strip_prefix("usage_usec "))?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cgroup(files: &[(&str, &str)]) -> PathBuf {
        let root = std::env::temp_dir().join(format!(
            "overseer-cgroup-{}-{}",
            std::process::id(),
            files.len()
        ));
        let _ = std::fs::remove_dir_all(&root);
        for (path, text) in files {
            let file = root.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        root
    }

    #[test]
    fn cgroup_v2_then_v1_as_the_kernel_writes_them() {
        let v2 = cgroup(&[
            ("memory.current", "52428800\n"),
            ("memory.max", "max\n"),
            (
                "cpu.stat",
                "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n",
            ),
        ]);
        assert_eq!(
            read(&v2),
            Some(Sample {
                memory: 52_428_800,
                limit: None,
                cpu_micros: 1_500_000
            })
        );
        let v1 = cgroup(&[
            ("memory/memory.usage_in_bytes", "1048576\n"),
            ("memory/memory.limit_in_bytes", "9223372036854771712\n"),
            ("cpuacct/cpuacct.usage", "2000000000\n"),
            ("unused", ""),
        ]);
        assert_eq!(
            read(&v1),
            Some(Sample {
                memory: 1_048_576,
                limit: None,
                cpu_micros: 2_000_000
            })
        );
        assert_eq!(
            read(Path::new("/nonexistent-cgroup")),
            None,
            "not in a container"
        );
    }

    #[test]
    fn cpu_is_averaged_between_reports_and_growth_is_a_streak_without_a_fall() {
        let t0 = Instant::now();
        let at = |secs: u64| t0 + Duration::from_secs(secs);
        let now = |secs: i64| Timestamp::from_second(1_700_000_000 + secs).unwrap();
        let sample = |memory: u64, cpu_micros: u64| Sample {
            memory,
            limit: Some(1000),
            cpu_micros,
        };
        // (memory, CPU µs so far, seconds; millicores, growing since)
        type Row = (u64, u64, u64, Option<i64>, Option<i64>);
        let rows: [Row; 5] = [
            (100, 0, 0, None, None),
            (200, 500_000, 1, Some(500), Some(1)),
            (200, 1_500_000, 2, Some(1000), Some(1)),
            (300, 1_500_000, 3, Some(0), Some(1)),
            (250, 1_600_000, 4, Some(100), None),
        ];
        let (mut before, mut growing) = (None, None);
        for (i, (memory, cpu, secs, millicores, since)) in rows.into_iter().enumerate() {
            let (use_, next) = measure(
                before,
                sample(memory, cpu),
                at(secs),
                growing,
                now(secs as i64),
            );
            assert_eq!(use_.cpu_millicores, millicores, "row {i}");
            assert_eq!(
                use_.memory_growing_since.map(|t| t.0),
                since.map(now),
                "row {i}"
            );
            assert_eq!(use_.memory_limit_bytes, Some(1000));
            before = Some((sample(memory, cpu), at(secs)));
            growing = next;
        }
    }
}
