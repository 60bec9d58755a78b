//! Profile files written off the caller's path: one process-wide writer
//! thread takes the latest text of each file and writes it, so that a run
//! which moved its kernel's figures does not wait for the file system
//! (0.4-0.8 ms per write measured on the dev machine, on the critical path
//! of every eighth run of a short kernel before).
//!
//! A file's pending text is read back by [`pending`] (a load sees what a
//! save queued, even before it reached the disk), and [`flush`] waits until
//! every queued text is written: a [`super::ProfileStore`] flushes when it
//! goes, so the engine's profiles are on disk once the engine is dropped.
//! Where no thread can be started, the text is written on the caller's
//! thread, as before.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

/// The texts waiting to be written, and whether one is being written.
#[derive(Default)]
struct Queue {
    files: BTreeMap<PathBuf, String>,
    /// The text taken from `files` that is being written (still what a
    /// load of its path reads: the file may not hold it yet).
    writing: Option<(PathBuf, String)>,
    /// The writer thread runs (started by a save, it ends once nothing is
    /// queued).
    started: bool,
    /// The last writer thread, joined by [`flush`] or by the next start
    /// (so that no thread outlives the engines that queued its work).
    thread: Option<std::thread::JoinHandle<()>>,
}

struct Writer {
    queue: Mutex<Queue>,
    /// Signalled when a text is queued (for the thread) and when one was
    /// written (for [`flush`]).
    changed: Condvar,
}

fn writer() -> &'static Writer {
    static WRITER: OnceLock<Writer> = OnceLock::new();
    WRITER.get_or_init(|| Writer {
        queue: Mutex::new(Queue::default()),
        changed: Condvar::new(),
    })
}

fn lock(w: &Writer) -> MutexGuard<'_, Queue> {
    // A panic while holding the lock leaves a consistent map behind (each
    // step is one insert or remove): carry on.
    w.queue.lock().unwrap_or_else(|p| p.into_inner())
}

/// Queues `text` to be written to `path` (replacing any text still queued
/// for it), with `write` (which warns about failures itself).
pub(super) fn queue(path: PathBuf, text: String, write: fn(&Path, &str)) {
    let w = writer();
    let mut q = lock(w);
    q.files.insert(path, text);
    if !q.started {
        if let Some(old) = q.thread.take() {
            // It found nothing queued and is ending (or has ended).
            let _ = old.join();
        }
        let spawned = std::thread::Builder::new()
            .name("coexec-profiles".into())
            .spawn(move || run(write));
        match spawned {
            Ok(t) => {
                q.started = true;
                q.thread = Some(t);
            }
            Err(e) => {
                tracing::debug!("profiles written on the caller's thread: {e}");
                let files = std::mem::take(&mut q.files);
                drop(q);
                for (p, t) in files {
                    write(&p, &t);
                }
                return;
            }
        }
    }
    w.changed.notify_all();
}

/// The text queued for `path` or being written to it, if any.
pub(super) fn pending(path: &Path) -> Option<String> {
    let q = lock(writer());
    let writing = q.writing.as_ref().filter(|(p, _)| p == path);
    q.files.get(path).or(writing.map(|(_, t)| t)).cloned()
}

/// Waits until every text queued so far is written.
pub(super) fn flush() {
    let w = writer();
    let mut q = lock(w);
    while q.started {
        q = w.changed.wait(q).unwrap_or_else(|p| p.into_inner());
    }
    if let Some(t) = q.thread.take() {
        drop(q);
        let _ = t.join();
    }
}

/// The writer thread: writes each queued text, the oldest path first, for
/// the rest of the process.
fn run(write: fn(&Path, &str)) {
    let w = writer();
    let mut q = lock(w);
    loop {
        let Some((path, text)) = q.files.pop_first() else {
            // Nothing queued: the thread ends (the next save starts one).
            q.started = false;
            w.changed.notify_all();
            return;
        };
        q.writing = Some((path.clone(), text.clone()));
        drop(q);
        write(&path, &text);
        q = lock(w);
        q.writing = None;
        w.changed.notify_all();
    }
}
