//! Why a compile ran: the parts of a CAS object name that changed since
//! the previous compile of the same source (docs/rebuilds.md).
//!
//! compiletools names every object it caches
//! `<basename>_<file_hash>_<dep_hash>_<macro_state_hash>.o` (formats.md
//! §6.3): the source's git blob, the XOR of its transitive headers, its
//! effective macro state. A compile that ran had a key the store did not
//! hold; comparing that key with the one of the source's previous compile
//! names what changed ([`classify`]). The previous compile is the
//! receiver's compile history's ([`crate::history`]), keyed by a rule's
//! [`stable_identity`]: the source for a compile, the target without its
//! content hashes otherwise — never the hashed object name, which changes
//! exactly when the source is recompiled.
//!
//! A precompiled header or module BMI has no content hash in its name;
//! its manifest lists its transitive headers' hashes
//! ([`manifest_hashes`], read beside the target), which against the
//! previous compile's name the headers that changed ([`header_diff`]).
//!
//! Everything else here is pure and bounded: constant work per name (the
//! fixed-width tails of formats.md §6.3 and §6.6) plus one copy of an
//! identity that is rewritten.

mod cas_key;
mod header_diff;
mod identity;
pub(crate) mod manifest_hashes;
mod reason;
mod stable_hash;

pub use cas_key::CasKey;
pub(crate) use header_diff::MAX_NAMED_HEADERS;
pub use header_diff::{changed_headers, classify_manifest};
pub use identity::{stable_identity, stable_identity_in};
pub use manifest_hashes::HeaderHashes;
pub(crate) use reason::REASONS;
pub use reason::{classify, Changed, RebuildReason};
pub use stable_hash::stable_hash;
