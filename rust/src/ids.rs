//! Deterministic trace and span ids (DESIGN §3).
