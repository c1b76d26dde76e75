//! What machine and which tool versions a table was measured with.

pub fn describe() -> String {
    let nproc = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let mhz = cpuinfo
        .lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| format!(" @ {} MHz", v.trim()))
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into());
    let profile = if cfg!(debug_assertions) {
        "DEBUG build (numbers are meaningless)"
    } else {
        "release"
    };
    format!(
        "- machine: {nproc} CPUs (nproc), {model}{mhz}, Linux {kernel}, load average at start {load}\n\
         - build: {profile}, {rustc}\n\
         - tools: pulse {pulse} (path ../pulse), loom {loom}, shuttle {shuttle}, corosensei {coro}\n",
        rustc = env!("BENCH_RUSTC_VERSION"),
        pulse = if cfg!(feature = "pulse") { env!("BENCH_PULSE_VERSION") } else { "(not built: --no-default-features)" },
        loom = env!("BENCH_LOOM_VERSION"),
        shuttle = env!("BENCH_SHUTTLE_VERSION"),
        coro = env!("BENCH_COROSENSEI_VERSION"),
    )
}
