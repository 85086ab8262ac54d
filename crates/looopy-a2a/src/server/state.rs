//! [`ServerState`]: what every binding and the service share.

use std::sync::Arc;
use std::time::Duration;

use looopy_core::CancellationToken;

use crate::runner::TurnRunner;
use crate::server::auth::AuthConfig;
use crate::server::card::AgentCardConfig;
use crate::server::push::Push;
use crate::server::tasks::Tasks;
use crate::version::ProtocolVersion;

/// What every request handler shares.
pub(crate) struct ServerState {
    pub(crate) tasks: Arc<Tasks>,
    /// Push notifications, when they are on.
    pub(crate) push: Option<Arc<Push>>,
    /// The runner the tasks run turns with (asked for direct replies too).
    pub(crate) runner: Arc<dyn TurnRunner>,
    /// Execution records, served to each task's principal.
    pub(crate) records: Option<Arc<dyn looopy_core::store::RecordStore>>,
    /// The prices the record route estimates costs with.
    pub(crate) prices: looopy_core::pricing::PriceTable,
    pub(crate) card: AgentCardConfig,
    pub(crate) auth: AuthConfig,
    pub(crate) rpc_path: String,
    pub(crate) max_body_bytes: usize,
    pub(crate) shutdown: CancellationToken,
    pub(crate) shutdown_grace: Duration,
    pub(crate) tool_progress: bool,
    pub(crate) web_ui: bool,
    pub(crate) recovery_scan: Duration,
    /// The card a request without `A2A-Version` gets.
    pub(crate) card_default: ProtocolVersion,
}
