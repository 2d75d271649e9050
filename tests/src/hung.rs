//! What a job that timed out was doing: every process of its process
//! group with its command line and, per thread, its name, state and the
//! kernel function it sleeps in, then each process's user-space stacks
//! when `gdb` is installed. A hang seen once in a long run is then
//! diagnosable from the test's failure message alone.

use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// At most this many processes get stack traces (a job has few PEs).
const MAX_TRACED: usize = 8;
/// Bound on one `gdb` run.
const GDB_LIMIT: Duration = Duration::from_secs(20);
/// Bound on the text kept of one process's stacks.
const STACK_CHARS: usize = 12_000;

/// The processes whose process group is `pgid`, in pid order.
fn group(pgid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&pid: &i32| stat_field(&format!("/proc/{pid}/stat"), 2) == Some(pgid.to_string()))
        .collect();
    pids.sort_unstable();
    pids
}

/// Field `n` (0 = state) after the `(comm)` of a `/proc/.../stat` file.
fn stat_field(path: &str, n: usize) -> Option<String> {
    let st = std::fs::read_to_string(path).ok()?;
    let (_, rest) = st.rsplit_once(')')?;
    rest.split_whitespace().nth(n).map(str::to_string)
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".to_string())
}

/// One line per process and thread of group `pgid`, and their stacks.
pub fn describe_group(pgid: i32) -> String {
    let pids = group(pgid);
    if pids.is_empty() {
        return "no process of the job was left\n".to_string();
    }
    let mut out = String::new();
    for &pid in &pids {
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| {
                b.split(|&c| c == 0)
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let _ = writeln!(out, "process {pid}: {}", cmd.trim());
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        for tid in tasks {
            let base = format!("/proc/{pid}/task/{tid}");
            // The system call a thread is in (its number and arguments,
            // "running" when in user space) and its kernel stack (root
            // only): what a thread was doing when gdb gives no stack.
            let kstack = read_trim(&format!("{base}/stack"))
                .lines()
                .filter_map(|l| l.split_whitespace().nth(1))
                .take(6)
                .collect::<Vec<_>>()
                .join(" < ");
            let _ = writeln!(
                out,
                "  thread {tid} {:<16} state {} in {} syscall [{}] kernel [{kstack}]",
                read_trim(&format!("{base}/comm")),
                stat_field(&format!("{base}/stat"), 0).unwrap_or_else(|| "?".into()),
                read_trim(&format!("{base}/wchan")),
                read_trim(&format!("{base}/syscall")),
            );
        }
    }
    for &pid in pids.iter().take(MAX_TRACED) {
        let _ = writeln!(out, "stacks of process {pid}:\n{}", stacks(pid));
    }
    out
}

/// `gdb`'s backtrace of every thread of `pid`, bounded in time and size.
fn stacks(pid: i32) -> String {
    let child = Command::new("gdb")
        .args(["-batch", "-nx", "-p", &pid.to_string()])
        .args(["-ex", "set debuginfod enabled off"])
        .args(["-ex", "thread apply all bt 30"])
        .env_remove("DEBUGINFOD_URLS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return format!("  (no stacks: cannot run gdb: {e})"),
    };
    // Read as it comes, so that a full pipe never stalls gdb.
    let reader = child.stdout.take().map(|mut o| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = std::io::Read::read_to_end(&mut o, &mut v);
            v
        })
    });
    let until = Instant::now() + GDB_LIMIT;
    while Instant::now() < until {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    let out = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    let text = String::from_utf8_lossy(&out);
    let kept: String = text
        .lines()
        .filter(|l| l.starts_with('#') || l.starts_with("Thread "))
        .collect::<Vec<_>>()
        .join("\n");
    if kept.is_empty() {
        return format!("  (gdb printed no stack within {GDB_LIMIT:?})");
    }
    match kept.char_indices().nth(STACK_CHARS) {
        Some((i, _)) => format!("{}\n  ...", &kept[..i]),
        None => kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sleeping child of its own group is listed with its command line.
    #[test]
    fn a_group_lists_its_processes() {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("sleep runs");
        let pgid = child.id() as i32;
        // Until the exec is done, the child's command line is not yet
        // `sleep 30`: wait for it (bounded).
        let until = Instant::now() + Duration::from_secs(10);
        while std::fs::read(format!("/proc/{pgid}/cmdline"))
            .map_or(true, |c| !c.starts_with(b"sleep"))
            && Instant::now() < until
        {
            std::thread::yield_now();
        }
        let text = describe_group(pgid);
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            text.contains(&format!("process {pgid}: sleep 30")),
            "{text}"
        );
        assert!(text.contains("thread"), "{text}");
        assert_eq!(describe_group(pgid), "no process of the job was left\n");
    }
}
