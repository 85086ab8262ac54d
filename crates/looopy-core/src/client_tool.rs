//! Client tools: tools the client declares for a turn and runs itself
//! ([`ClientTools`], read from the `clientTools` metadata key), and the
//! results it sends back ([`ClientToolResult`]). See `docs/tools.md` for the
//! wire shape.
//!
//! A client tool's result: the client ran a call the model made and sends the outcome back in a data part
//! of its next message. `looopy-a2a` and `looopy-tools` (which read the
//! declarations) and `looopy-agent` (which turns results into tool messages)
//! share these types.
//!
//! ```json
//! {"kind": "data", "data": {"toolCallId": "call-1", "result": {"temp": 21}}}
//! {"kind": "data", "data": {"toolCallId": "call-2", "error": "user declined"}}
//! ```
//!
//! `"result"` with `"isError": true` also reports a failure.

mod declared;
mod result;

pub use declared::{
    CLIENT_TOOLS_KEY, ClientTools, InvalidClientTools, PendingClientCall, client_results,
    split_client_results,
};
pub use result::{ClientToolResult, split_results};
