//! Two pieces of one build's work at once: the trace's plan on a second
//! thread while the calling one computes the analytics, the metrics and the
//! root's attributes (`build.rs`).

/// `(here(), aside())`, with `aside` run on a second thread meanwhile when
/// `concurrent` (and a thread can be had), else here afterwards. A panic
/// of `aside` is raised again on this thread, where the FFI's guard
/// catches it.
pub(super) fn alongside<H, A: Send>(
    concurrent: bool,
    aside: impl Fn() -> A + Sync,
    here: impl FnOnce() -> H,
) -> (H, A) {
    if !concurrent {
        let h = here();
        return (h, aside());
    }
    std::thread::scope(|s| {
        let aside = &aside;
        let helper = std::thread::Builder::new()
            .name("ct-alongside".into())
            .spawn_scoped(s, aside)
            .ok();
        let h = here();
        let a = match helper {
            Some(helper) => helper
                .join()
                .unwrap_or_else(|payload| std::panic::resume_unwind(payload)),
            // No thread to be had (a process limit).
            None => aside(),
        };
        (h, a)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alongside_runs_aside_on_another_thread_only_when_asked() {
        let me = std::thread::current().id();
        let (here, aside) = alongside(
            true,
            || std::thread::current().id(),
            || std::thread::current().id(),
        );
        assert_eq!(here, me);
        assert_ne!(aside, me);
        let (here, aside) = alongside(
            false,
            || std::thread::current().id(),
            || std::thread::current().id(),
        );
        assert_eq!((here, aside), (me, me));
    }

    #[test]
    fn a_panic_aside_comes_back_to_the_calling_thread() {
        // As the FFI's guard catches it: catch_unwind on the calling thread.
        let caught = std::panic::catch_unwind(|| alongside(true, || panic!("planning failed"), || 1));
        let payload = caught.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"planning failed"));
    }
}
