//! [`ToolProviderExt`]: wrapping providers in a chain.

use looopy_core::ToolProvider;

use super::TimeoutTools;

/// Wrapping methods for every [`ToolProvider`], tower style:
/// `tools.with_timeouts()`. The wrapper added last runs first. (Which calls
/// may run is decided once for every provider by the loop's
/// `Hook::approve_tool`, not by a wrapper.)
pub trait ToolProviderExt: ToolProvider + Sized {
    /// Bounds each call in time (30 s by default; configure the returned
    /// [`TimeoutTools`]) and honours the turn's cancellation.
    fn with_timeouts(self) -> TimeoutTools<Self> {
        TimeoutTools::new(self)
    }
}

impl<P: ToolProvider + Sized> ToolProviderExt for P {}
