//! One invocation directory in, OTLP bytes out.

use crate::cancel::CancelToken;
use crate::error::Error;
use crate::request::{BuildOutput, BuildRequest};

/// Reads the build in `req.invocation_dir` and returns its OTLP requests.
pub fn process_build(req: &BuildRequest, cancel: &CancelToken) -> Result<BuildOutput, Error> {
    cancel.check()?;
    let _ = req;
    Ok(BuildOutput::default())
}
