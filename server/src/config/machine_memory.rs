//! What memory this process may use, for `[memory] budget = "auto"`: the machine's physical
//! memory less its reserved hugepages (which no ordinary allocation can use), and the memory
//! limit of the process's cgroup (v2 `memory.max`, v1 `memory.limit_in_bytes`; a container's
//! or a systemd unit's `MemoryMax=`), whichever is smaller. Read from `/proc` and
//! `/sys/fs/cgroup` under a root that tests replace.

use std::fmt;
use std::path::{Path, PathBuf};

use bytesize::ByteSize;

/// A cgroup v1 limit at or above this is "unlimited" (the kernel writes 2^63 less a page).
const V1_UNLIMITED: u64 = 1 << 62;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineMemory {
    pub physical: u64,
    pub hugepages: u64,
    /// The smallest limit of the cgroup and its ancestors, and the file it was read from.
    pub cgroup_limit: Option<(u64, PathBuf)>,
}

impl MachineMemory {
    /// This machine's, as this process sees it.
    pub fn read() -> MachineMemory {
        Self::read_under(Path::new("/"), super::total_memory_bytes)
    }

    /// Read with `root` in place of `/`; `physical` when `/proc/meminfo` cannot be read.
    pub fn read_under(root: &Path, physical: impl FnOnce() -> u64) -> MachineMemory {
        let meminfo = std::fs::read_to_string(root.join("proc/meminfo")).unwrap_or_default();
        let field = |name: &str| -> Option<u64> {
            let line = meminfo.lines().find(|l| l.starts_with(name))?;
            let mut words = line[name.len()..].split_whitespace();
            let value: u64 = words.next()?.parse().ok()?;
            Some(match words.next() {
                Some("kB") => value * 1024,
                _ => value,
            })
        };
        let physical = field("MemTotal:").unwrap_or_else(physical);
        let hugepages = field("HugePages_Total:")
            .zip(field("Hugepagesize:"))
            .map_or(0, |(pages, size)| pages.saturating_mul(size));
        MachineMemory {
            physical,
            hugepages,
            cgroup_limit: cgroup_limit(root),
        }
    }

    /// What "auto" may take before its margins: the smaller of physical memory less hugepages
    /// and the cgroup limit.
    pub fn usable(&self) -> u64 {
        let free_of_hugepages = self.physical.saturating_sub(self.hugepages);
        match &self.cgroup_limit {
            Some((limit, _)) => free_of_hugepages.min(*limit),
            None => free_of_hugepages,
        }
    }
}

impl fmt::Display for MachineMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "physical {}", ByteSize(self.physical).to_string_as(true))?;
        if self.hugepages > 0 {
            write!(
                f,
                " less hugepages {}",
                ByteSize(self.hugepages).to_string_as(true)
            )?;
        }
        match &self.cgroup_limit {
            Some((limit, file)) => write!(
                f,
                ", cgroup limit {} ({})",
                ByteSize(*limit).to_string_as(true),
                file.display()
            ),
            None => write!(f, ", no cgroup limit"),
        }
    }
}

/// The smallest memory limit on this process's cgroup path and its ancestors, v2 or v1.
fn cgroup_limit(root: &Path) -> Option<(u64, PathBuf)> {
    let membership = std::fs::read_to_string(root.join("proc/self/cgroup")).ok()?;
    let mut found: Option<(u64, PathBuf)> = None;
    for line in membership.lines() {
        // `hierarchy-id:controllers:path`; v2's is `0::path`.
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (base, file) = if controllers.is_empty() {
            ("sys/fs/cgroup", "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            ("sys/fs/cgroup/memory", "memory.limit_in_bytes")
        } else {
            continue;
        };
        let mut dir = Some(Path::new(path.trim_start_matches('/')));
        while let Some(d) = dir {
            let candidate = root.join(base).join(d).join(file);
            if let Some(limit) = read_limit(&candidate) {
                if found.as_ref().is_none_or(|(f, _)| limit < *f) {
                    found = Some((
                        limit,
                        candidate
                            .strip_prefix(root)
                            .map_or(candidate.clone(), |p| Path::new("/").join(p)),
                    ));
                }
            }
            dir = d.parent();
        }
    }
    found
}

/// A limit file's value; `max` (v2) and v1's near-2^63 are no limit.
fn read_limit(file: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let value: u64 = text.trim().parse().ok()?;
    (value < V1_UNLIMITED).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn root(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    const MEMINFO: &str = "MemTotal:       263921024 kB\nMemFree:        1000 kB\n\
                           HugePages_Total:      16\nHugepagesize:    1048576 kB\n";

    #[test]
    fn hugepages_are_taken_off_physical_memory() {
        let r = root(&[("proc/meminfo", MEMINFO)]);
        let m = MachineMemory::read_under(r.path(), || unreachable!());
        assert_eq!(m.physical, 263_921_024 * 1024);
        assert_eq!(m.hugepages, 16 * GIB);
        assert_eq!(m.usable(), 263_921_024 * 1024 - 16 * GIB);
        assert_eq!(m.cgroup_limit, None);
    }

    #[test]
    fn a_cgroup_v2_limit_on_the_path_or_an_ancestor_caps_it() {
        let r = root(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/cgroup", "0::/system.slice/snarkd.service\n"),
            (
                "sys/fs/cgroup/system.slice/snarkd.service/memory.max",
                "max\n",
            ),
            ("sys/fs/cgroup/system.slice/memory.max", "137438953472\n"),
        ]);
        let m = MachineMemory::read_under(r.path(), || unreachable!());
        assert_eq!(
            m.cgroup_limit,
            Some((
                128 * GIB,
                PathBuf::from("/sys/fs/cgroup/system.slice/memory.max")
            ))
        );
        assert_eq!(m.usable(), 128 * GIB);
        assert!(m.to_string().contains("cgroup limit 128.0 GiB"), "{m}");
    }

    #[test]
    fn a_cgroup_v1_memory_limit_caps_it_and_its_unlimited_value_does_not() {
        let r = root(&[
            ("proc/meminfo", MEMINFO),
            (
                "proc/self/cgroup",
                "5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n",
            ),
            (
                "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes",
                "68719476736\n",
            ),
            (
                "sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ]);
        let m = MachineMemory::read_under(r.path(), || unreachable!());
        assert_eq!(m.usable(), 64 * GIB);
        let unlimited = root(&[
            ("proc/meminfo", MEMINFO),
            ("proc/self/cgroup", "4:memory:/\n"),
            (
                "sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ]);
        let m = MachineMemory::read_under(unlimited.path(), || unreachable!());
        assert_eq!(m.cgroup_limit, None);
    }

    #[test]
    fn without_proc_the_fallback_gives_physical_memory() {
        let r = root(&[]);
        let m = MachineMemory::read_under(r.path(), || 8 * GIB);
        assert_eq!((m.physical, m.hugepages, m.usable()), (8 * GIB, 0, 8 * GIB));
    }
}
