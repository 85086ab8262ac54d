//! How a write changes a stored artifact, the same in every backend: `put`
//! replaces an artifact but keeps its creation time (and so its place in
//! listings); `append_parts` adds parts at the end, creating the artifact
//! when it is missing.

use chrono::{DateTime, Utc};

use super::StoredArtifact;
use crate::message::Part;
use crate::task::Artifact;

impl StoredArtifact {
    /// A new artifact of `task_id`, created and updated `now`.
    pub fn created(
        context_id: &str,
        task_id: &str,
        artifact: Artifact,
        now: DateTime<Utc>,
    ) -> Self {
        StoredArtifact {
            artifact,
            context_id: context_id.to_owned(),
            task_id: task_id.to_owned(),
            created_at: now,
            updated_at: now,
        }
    }

    /// What `put` does to an existing artifact: replaced by `artifact` of
    /// `task_id`, its creation time kept.
    pub fn replace(&mut self, task_id: &str, artifact: Artifact, now: DateTime<Utc>) {
        self.artifact = artifact;
        task_id.clone_into(&mut self.task_id);
        self.updated_at = now;
    }

    /// What `append_parts` does to an existing artifact: `parts` added at
    /// the end. The task it belongs to stays the one that created it.
    pub fn append(&mut self, parts: impl IntoIterator<Item = Part>, now: DateTime<Utc>) {
        self.artifact.parts.extend(parts);
        self.updated_at = now;
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;

    #[test]
    fn replace_keeps_the_creation_time_and_append_keeps_the_task() {
        let t0 = DateTime::<Utc>::UNIX_EPOCH;
        let t1 = t0 + Duration::seconds(1);
        let mut stored =
            StoredArtifact::created("c", "t1", Artifact::new("a", vec![Part::text("x")]), t0);
        stored.append([Part::text("y")], t1);
        assert_eq!(stored.artifact.parts, [Part::text("x"), Part::text("y")]);
        assert_eq!((stored.created_at, stored.updated_at), (t0, t1));
        stored.replace(
            "t2",
            Artifact::new("a", vec![Part::text("z")]),
            t1 + Duration::seconds(1),
        );
        assert_eq!(stored.artifact.parts, [Part::text("z")]);
        assert_eq!(stored.task_id, "t2");
        assert_eq!(stored.created_at, t0);
    }
}
