//! A tool's answer, as the runtime hears it. The runtime knows nothing of the other system:
//! the tool turns that system's own answer into this.
//!
//! ```
//! use twice_runtime::ToolAnswer;
//!
//! // The provider recognised the idempotency key: the first effect, nothing applied again.
//! let answer = ToolAnswer::Repeat { first: "cr_1".into(), receipt: "credit cr_1".into() };
//! assert_eq!(answer.receipt(), "credit cr_1");
//! assert!(!answer.is_rejection());
//! ```

use serde::{Deserialize, Serialize};

/// What came back from one attempt of a tool whose request reached the other system.
/// Every variant carries the receipt the ledger records and the model is told.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolAnswer {
    /// The other system applied the request now.
    Applied {
        /// What the ledger records and the model is told.
        receipt: String,
    },
    /// The other system recognised the idempotency key and answered with the first effect,
    /// `first`, applying nothing again.
    Repeat {
        /// The first effect's id, as the other system names it.
        first: String,
        /// What the ledger records and the model is told.
        receipt: String,
    },
    /// The other system refused: a definite no, nothing applied.
    Rejected {
        /// Its reason.
        reason: String,
        /// What the ledger records and the model is told.
        receipt: String,
    },
}

impl ToolAnswer {
    /// What the ledger records and the model is told, whatever the answer was.
    pub fn receipt(&self) -> &str {
        match self {
            ToolAnswer::Applied { receipt }
            | ToolAnswer::Repeat { receipt, .. }
            | ToolAnswer::Rejected { receipt, .. } => receipt,
        }
    }

    /// The other system said no: the attempt definitely did not take effect.
    pub fn is_rejection(&self) -> bool {
        matches!(self, ToolAnswer::Rejected { .. })
    }
}
