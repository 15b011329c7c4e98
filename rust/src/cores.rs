//! Whether a second thread can run beside the calling one.
//!
//! The read, the decode and the trace plan of a large build each put part
//! of their work on a second thread. That pays only when the two can run
//! at once: confined to one core (an affinity mask of one CPU, a cgroup
//! quota of one), the threads take turns on it and every split only adds
//! its own costs. Measured on the 100k-rule benchmark build under
//! `taskset -c 0`: 127–133 ms best with one thread, 142–147 ms with the
//! splits.

/// Whether the process may run on two CPUs at once, as
/// `std::thread::available_parallelism` sees it (affinity mask and cgroup
/// quota). Asked per build, so a changed mask or quota counts from the
/// next build on; it costs a few system calls, nothing beside a build
/// large enough to split.
pub fn second_core() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
}
