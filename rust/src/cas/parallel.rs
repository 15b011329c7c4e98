//! Scanning the members of a cell (shards or command-hash directories) on
//! several threads.
//!
//! A scan costs one `stat` per entry and is bound by the kernel and the
//! disk, not by our code; keeping several requests in flight is what makes
//! it fast (on a cold cache especially). Each worker pulls the next member
//! from a shared counter and fills its own bucket table and anomaly
//! counters; the results are merged afterwards, so no lock is taken per
//! entry. The numbers do not depend on how members were distributed.

use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use super::buckets::BucketTable;
use super::scan::{Member, Scan};
use crate::Error;

/// A cell with fewer members per potential thread is scanned on fewer
/// threads: spawning a thread costs more than listing a few directories.
const MIN_MEMBERS_PER_THREAD: usize = 8;

type WorkerResult<'c, A> = Result<(Scan<'c>, A), Error>;

/// Runs `work` for every member and returns the merged table; counts and
/// warnings of the workers are merged into `scan`.
pub(crate) fn scan_members<'c, K, W>(
    scan: &mut Scan<'c>,
    members: &[Member],
    work: W,
) -> Result<BucketTable<K>, Error>
where
    K: Hash + Eq + Send,
    W: Fn(&mut Scan<'c>, &Member, &mut BucketTable<K>) -> Result<(), Error> + Sync,
{
    let parts = fold_members(scan, members, |scan, _, member, table: &mut BucketTable<K>| {
        work(scan, member, table)
    })?;
    let mut table = BucketTable::default();
    for part in parts {
        table.merge(part);
    }
    Ok(table)
}

/// Runs `work` for every member (with its index) and returns its results
/// in the order of `members`; counts and warnings of the workers are merged
/// into `scan`.
pub(crate) fn map_members<'c, T, W>(scan: &mut Scan<'c>, members: &[Member], work: W) -> Result<Vec<T>, Error>
where
    T: Send,
    W: Fn(&mut Scan<'c>, usize, &Member) -> Result<T, Error> + Sync,
{
    let parts = fold_members(scan, members, |scan, index, member, out: &mut Vec<(usize, T)>| {
        out.push((index, work(scan, index, member)?));
        Ok(())
    })?;
    let mut all: Vec<(usize, T)> = parts.into_iter().flatten().collect();
    all.sort_unstable_by_key(|(index, _)| *index);
    debug_assert!(all.iter().enumerate().all(|(i, (index, _))| i == *index));
    Ok(all.into_iter().map(|(_, t)| t).collect())
}

/// The engine of both: every member is passed to `work` exactly once (with
/// its index), on one of up to `max_threads` threads, each thread folding
/// into its own accumulator; returns the accumulators.
fn fold_members<'c, A, W>(scan: &mut Scan<'c>, members: &[Member], work: W) -> Result<Vec<A>, Error>
where
    A: Default + Send,
    W: Fn(&mut Scan<'c>, usize, &Member, &mut A) -> Result<(), Error> + Sync,
{
    let threads = scan
        .limits
        .max_threads
        .min(members.len() / MIN_MEMBERS_PER_THREAD)
        .max(1);
    if threads == 1 {
        let mut acc = A::default();
        for (index, member) in members.iter().enumerate() {
            scan.check_cancel()?;
            work(scan, index, member, &mut acc)?;
        }
        return Ok(vec![acc]);
    }

    let next = AtomicUsize::new(0);
    let worker = |mut local: Scan<'c>| -> WorkerResult<'c, A> {
        let mut acc = A::default();
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(member) = members.get(index) else { break };
            local.check_cancel()?;
            work(&mut local, index, member, &mut acc)?;
        }
        Ok((local, acc))
    };
    let results: Vec<thread::Result<WorkerResult<'c, A>>> = thread::scope(|s| {
        // `threads - 1` helpers plus the calling thread. A helper that
        // cannot be spawned (thread limit) is simply missing: the others,
        // the calling thread at least, take its share from the counter.
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| {
                let local = scan.fork();
                let worker = &worker;
                thread::Builder::new().spawn_scoped(s, move || worker(local)).ok()
            })
            .collect();
        let mut results = vec![Ok(worker(scan.fork()))];
        results.extend(helpers.into_iter().map(|h| h.join()));
        results
    });

    let mut accs = Vec::with_capacity(results.len());
    let mut first_error = None;
    for result in results {
        match result {
            Ok(Ok((local, acc))) => {
                scan.absorb(local);
                accs.push(acc);
            }
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            // A worker panicked: a bug here. Re-raise it on this thread, where
            // the FFI boundary's guard turns it into an error code.
            Err(payload) => std::panic::resume_unwind(payload),
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(accs),
    }
}
