//! [`ToolProviderExt`]: wrapping providers in a chain.

use looopy_core::ToolProvider;

use crate::permission::{PermissionHook, PermissionTools};
use crate::timeout::TimeoutTools;

/// Wrapping methods for every [`ToolProvider`], tower style:
/// `tools.with_permissions(hook).with_timeouts()`. The wrapper added last
/// runs first.
pub trait ToolProviderExt: ToolProvider + Sized {
    /// Bounds each call in time (30 s by default; configure the returned
    /// [`TimeoutTools`]) and honours the turn's cancellation.
    fn with_timeouts(self) -> TimeoutTools<Self> {
        TimeoutTools::new(self)
    }

    /// Asks `hook` before each call.
    fn with_permissions<H: PermissionHook>(self, hook: H) -> PermissionTools<Self, H> {
        PermissionTools::new(self, hook)
    }
}

impl<P: ToolProvider + Sized> ToolProviderExt for P {}
