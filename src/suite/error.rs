//! Why the suite could not run at all (failed runs and verifications are
//! recorded in its report instead).

use std::path::PathBuf;

/// An error of [`run`](super::run).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SuiteError {
    /// The engine has no usable Vulkan device.
    #[error("the suite needs a Vulkan device (none usable)")]
    NoGpu,
    /// The engine has no CPU workers.
    #[error("the suite needs CPU workers (the engine has none)")]
    NoWorkers,
    /// A kernel asked for does not exist; the message lists those that do.
    #[error("{0}")]
    UnknownKernel(String),
    /// The output folder could not be created.
    #[error("cannot create the output folder {}", path.display())]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The JSON report could not be written.
    #[error("cannot write the JSON report {}", path.display())]
    WriteJson {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The JSON report could not be serialised.
    #[error("cannot serialise the JSON report")]
    Json(#[from] serde_json::Error),
    /// A picture or a trace could not be written (the message names the
    /// file).
    #[error("writing pictures and traces: {0}")]
    Output(String),
}
