//! [`Deps`]: typed application state for tools (a database pool, a
//! client, a feature flag), looked up by type.
//!
//! Registered once on the loop's or the Agent's builder (`.dep(value)`),
//! and overridden per turn (or in a test) on the turn's context
//! ([`TurnContext::with_dep`](crate::TurnContext::with_dep)) or the Agent's
//! turn options: a value given for a turn replaces the builder's of the
//! same type for that turn only. A tool asks its context:
//! [`TurnContext::dep`](crate::TurnContext::dep).

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::tool::ToolError;

/// One value of each type, shared. Cheap to clone (one reference count);
/// an empty map allocates nothing.
#[derive(Clone, Default)]
pub struct Deps(Option<Arc<HashMap<TypeId, Dep>>>);

#[derive(Clone)]
struct Dep {
    value: Arc<dyn Any + Send + Sync>,
    name: &'static str,
}

impl Deps {
    /// No dependencies.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `value` as the dependency of type `T` (replacing any other).
    pub fn with<T: Send + Sync + 'static>(self, value: T) -> Self {
        self.with_shared(Arc::new(value))
    }

    /// With a shared `value` as the dependency of type `T`.
    pub fn with_shared<T: Send + Sync + 'static>(mut self, value: Arc<T>) -> Self {
        let map = Arc::make_mut(self.0.get_or_insert_with(Arc::default));
        map.insert(
            TypeId::of::<T>(),
            Dep {
                value,
                name: type_name::<T>(),
            },
        );
        self
    }

    /// The dependency of type `T`, if one was given.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        let dep = self.0.as_ref()?.get(&TypeId::of::<T>())?;
        dep.value.clone().downcast::<T>().ok()
    }

    /// The dependency of type `T`, or [`ToolError::MissingDependency`]
    /// naming the type.
    pub fn require<T: Send + Sync + 'static>(&self) -> Result<Arc<T>, ToolError> {
        self.get::<T>().ok_or(ToolError::MissingDependency {
            type_name: type_name::<T>(),
        })
    }

    /// These dependencies with `over`'s on top: a type both have takes
    /// `over`'s value. Allocates nothing when either is empty.
    pub fn overridden_by(&self, over: &Deps) -> Deps {
        match (&self.0, &over.0) {
            (_, None) => self.clone(),
            (None, _) => over.clone(),
            (Some(base), Some(top)) => {
                let mut map = (**base).clone();
                map.extend(top.iter().map(|(k, v)| (*k, v.clone())));
                Deps(Some(Arc::new(map)))
            }
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|m| m.is_empty())
    }

    /// The type names of the dependencies, sorted.
    pub fn type_names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self
            .0
            .iter()
            .flat_map(|m| m.values().map(|d| d.name))
            .collect();
        names.sort_unstable();
        names
    }
}

impl fmt::Debug for Deps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.type_names()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Pool(&'static str);
    #[derive(Debug, PartialEq)]
    struct Flag(bool);

    #[test]
    fn a_dependency_is_found_by_its_type_and_a_missing_one_is_named() {
        let deps = Deps::new().with(Pool("main")).with(Flag(true));
        assert_eq!(*deps.get::<Pool>().unwrap(), Pool("main"));
        assert_eq!(*deps.require::<Flag>().unwrap(), Flag(true));
        let missing = Deps::new().with(Flag(false)).require::<Pool>().unwrap_err();
        assert!(
            matches!(missing, ToolError::MissingDependency { type_name } if type_name.ends_with("::Pool")),
            "{missing:?}"
        );
        assert!(missing.to_string().contains("Pool"), "{missing}");
        assert_eq!(missing.failure(), crate::ToolFailure::Failed);
    }

    #[test]
    fn an_override_replaces_its_type_only() {
        let base = Deps::new().with(Pool("main")).with(Flag(false));
        let over = Deps::new().with(Pool("test"));
        let both = base.overridden_by(&over);
        assert_eq!(*both.get::<Pool>().unwrap(), Pool("test"));
        assert_eq!(*both.get::<Flag>().unwrap(), Flag(false));
        assert_eq!(
            *base.get::<Pool>().unwrap(),
            Pool("main"),
            "the base is unchanged"
        );
        assert!(Deps::new().overridden_by(&Deps::new()).is_empty());
        assert_eq!(both.type_names().len(), 2);
    }
}
