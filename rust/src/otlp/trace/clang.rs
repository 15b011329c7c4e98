//! The clang child spans of compile spans (issue 25) as every encoder
//! writes them: name, times, attributes, and the compile span's own
//! `ct.clang.*` attributes.

use crate::timetrace::{BuildTraces, ClangSpan};
use crate::timing::EventId;

/// Attribute of a child span: the event's `args.detail` (a path, a
/// template, a function), as clang wrote it.
pub(crate) const DETAIL: &str = "ct.clang.detail";
/// Attributes of a compile span with a trace, seconds.
pub(crate) const FRONTEND_S: &str = "ct.clang.frontend_s";
pub(crate) const BACKEND_S: &str = "ct.clang.backend_s";

/// The span's name: clang's event name (low cardinality; what it was
/// about is [`DETAIL`]).
pub(super) fn span_name(span: &ClangSpan) -> &'static str {
    span.kind.name()
}

/// The compile span's `ct.clang.*` attributes, in order, when its rule had
/// a trace.
pub(super) fn compile_attributes(
    clang: Option<&BuildTraces>,
    id: EventId,
) -> impl Iterator<Item = (&'static str, f64)> {
    let times = clang.and_then(|c| c.compile(id.slot())).map(|c| c.times);
    times
        .into_iter()
        .flat_map(|t| [(FRONTEND_S, t.frontend_s()), (BACKEND_S, t.backend_s())])
}
