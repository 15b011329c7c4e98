//! Helpers shared by the integration tests.

pub mod analytics;
pub mod fixture;
pub mod intended;
pub mod oracle;
pub mod proptest_config;
pub mod ref_metrics;
pub mod reference;
pub mod semconv;
