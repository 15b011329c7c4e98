//! The instrumentation scopes of everything the core emits: named as
//! compiletools names them, without a version (compiletools sets none).

use opentelemetry_proto::tonic::common::v1::InstrumentationScope;

/// Scope of the build's spans and of the CAS gauges and snapshot span.
pub const SCOPE_NAME: &str = "compiletools";
/// Scope of the ccache metrics and of the ccache snapshot span.
pub const CCACHE_SCOPE_NAME: &str = "compiletools.ccache";

/// The scope called `name`.
pub fn scope(name: &str) -> InstrumentationScope {
    InstrumentationScope {
        name: name.to_owned(),
        ..Default::default()
    }
}
