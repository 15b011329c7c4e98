//! Helpers shared by the integration tests.

#![allow(dead_code)] // each test binary uses a different part

pub mod analytics;
pub mod fixture;
pub mod intended;
pub mod oracle;
pub mod ref_metrics;
pub mod reference;
pub mod semconv;
