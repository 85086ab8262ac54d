//! [`ArtifactTexts`]: what the updates of a turn's artifacts have built.

use looopy_core::Part;

/// The text of each artifact of a turn as its updates build it: an update
/// with `append` extends the artifact's text, one without replaces it. A
/// stream resumed after its turn ended gets the answer as one whole
/// artifact in place of the chunks it missed; what was shown of it is a
/// prefix, and only the rest is new.
#[derive(Debug, Default)]
pub(crate) struct ArtifactTexts(Vec<(String, String)>);

/// What an update changed of an artifact's text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TextChange {
    /// The text grew by this (all of it, for an artifact's first update).
    Grew(String),
    /// The text is no longer what it was: this is all of it now.
    Replaced(String),
}

/// The text parts of an artifact (or message), joined.
pub(crate) fn text_of(parts: &[Part]) -> String {
    parts.iter().filter_map(Part::as_text).collect()
}

impl ArtifactTexts {
    /// Applies an update of artifact `id` carrying `text`.
    pub(crate) fn apply(&mut self, id: &str, text: &str, append: bool) -> TextChange {
        let Some((_, so_far)) = self.0.iter_mut().find(|(a, _)| a == id) else {
            self.0.push((id.to_owned(), text.to_owned()));
            return TextChange::Grew(text.to_owned());
        };
        if append {
            so_far.push_str(text);
            return TextChange::Grew(text.to_owned());
        }
        let change = match text.strip_prefix(so_far.as_str()) {
            Some(rest) => TextChange::Grew(rest.to_owned()),
            None => TextChange::Replaced(text.to_owned()),
        };
        text.clone_into(so_far);
        change
    }

    /// Every artifact's text, in the order they came.
    pub(crate) fn text(&self) -> String {
        self.0.iter().map(|(_, t)| t.as_str()).collect()
    }

    /// Whether no artifact text came yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.iter().all(|(_, t)| t.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_grow_and_a_whole_artifact_adds_only_what_is_new() {
        let mut texts = ArtifactTexts::default();
        assert!(texts.is_empty());
        assert_eq!(
            texts.apply("a", "Part one. ", false),
            TextChange::Grew("Part one. ".into())
        );
        assert_eq!(
            texts.apply("a", "Part", true),
            TextChange::Grew("Part".into())
        );
        // The stream resumed after the end: the answer comes whole.
        assert_eq!(
            texts.apply("a", "Part one. Part two.", false),
            TextChange::Grew(" two.".into())
        );
        assert_eq!(texts.text(), "Part one. Part two.");
        assert_eq!(
            texts.apply("a", "Something else", false),
            TextChange::Replaced("Something else".into())
        );
        assert_eq!(
            texts.apply("b", "tool output", false),
            TextChange::Grew("tool output".into())
        );
        assert_eq!(texts.text(), "Something elsetool output");
    }
}
