//! Thread binding through the kernel (Linux `sched_setaffinity` and
//! `sched_getaffinity`), with no library beyond libc: the binding of the
//! lean build, and the fallback of the hwloc build.

use tracing::warn;

/// Most PUs a `cpu_set_t` holds (`CPU_SETSIZE`).
const SET_SIZE: usize = libc::CPU_SETSIZE as usize;

/// Binds the calling thread to the PUs `pus` (all of them). `false` when
/// `pus` is empty, names a PU past `CPU_SETSIZE`, or the kernel refuses.
pub(super) fn bind_current_thread(pus: &[usize]) -> bool {
    if pus.is_empty() {
        return false;
    }
    if let Some(p) = pus.iter().find(|&&p| p >= SET_SIZE) {
        warn!(pu = p, "PU index past CPU_SETSIZE; thread not pinned");
        return false;
    }
    // SAFETY: `cpu_set_t` is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &p in pus {
        // SAFETY: `p < CPU_SETSIZE` (checked above), so the bit is inside `set`.
        unsafe { libc::CPU_SET(p, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; `set` is a valid `cpu_set_t` of
    // the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    rc == 0
}

/// OS indices of the PUs the calling thread may run on (`None` if the
/// kernel does not tell).
pub(super) fn current_thread_pus() -> Option<Vec<usize>> {
    // SAFETY: all zeroes is a valid (empty) `cpu_set_t`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is writable for the size
    // passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return None;
    }
    // SAFETY: every index is below CPU_SETSIZE, inside `set`.
    Some(
        (0..SET_SIZE)
            .filter(|&p| unsafe { libc::CPU_ISSET(p, &set) })
            .collect(),
    )
}

/// The PU the calling thread is running on at this moment (`None` if the
/// kernel does not tell). Only a hint: the thread may move at any time.
pub(super) fn current_pu() -> Option<usize> {
    // SAFETY: `sched_getcpu` takes no arguments and touches no memory of
    // ours; it returns the PU index or -1.
    let pu = unsafe { libc::sched_getcpu() };
    usize::try_from(pu).ok()
}
