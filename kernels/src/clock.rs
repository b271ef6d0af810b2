//! The clock of the crates' measurements (their `--ignored` benchmark tests): this thread's
//! CPU time, so that other jobs on a shared machine do not count.

/// This thread's CPU seconds (the first field of /proc/thread-self/schedstat: time on a CPU,
/// nanoseconds); wall seconds since the first call where that file is not there.
pub fn thread_cpu_seconds() -> f64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok();
    match schedstat.as_deref().and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok()) {
        Some(ns) => ns as f64 * 1e-9,
        None => START.get_or_init(std::time::Instant::now).elapsed().as_secs_f64(),
    }
}
