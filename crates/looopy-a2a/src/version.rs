//! [`ProtocolVersion`]: which A2A version a request speaks.

use std::fmt;
use std::str::FromStr;

/// The name of the HTTP header carrying the version (`A2A-Version`).
pub const VERSION_HEADER: &str = "A2A-Version";

/// The A2A protocol versions Looopy speaks.
///
/// The spec (§3.6) identifies a version by `Major.Minor`; patch numbers are
/// ignored. A request without an `A2A-Version` header (or with an empty one)
/// is a 0.3 request (§3.6.2: "Agents MUST interpret empty value as 0.3").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// A2A 0.3: slash-separated methods (`message/send`), `kind`-tagged objects.
    V0_3,
    /// A2A 1.0: PascalCase methods (`SendMessage`), ProtoJSON objects.
    V1_0,
}

impl ProtocolVersion {
    /// Every supported version, newest first.
    pub const ALL: [ProtocolVersion; 2] = [ProtocolVersion::V1_0, ProtocolVersion::V0_3];

    /// `"1.0"` or `"0.3"`: the value of the header and of `protocolVersion`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V0_3 => "0.3",
            ProtocolVersion::V1_0 => "1.0",
        }
    }

    /// The version a request asks for through its `A2A-Version` header:
    /// absent or empty means 0.3. Fails with the offending text when the
    /// version is not one Looopy speaks.
    pub fn from_header(value: Option<&str>) -> Result<Self, String> {
        match value.map(str::trim) {
            None | Some("") => Ok(ProtocolVersion::V0_3),
            Some(v) => v.parse(),
        }
    }
}

impl FromStr for ProtocolVersion {
    type Err = String;

    /// Parses `1.0`, `1`, `1.0.3`, `0.3`, `0.3.0`... (major and minor only).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.trim().split('.');
        let major = parts.next().and_then(|p| p.parse::<u32>().ok());
        let minor = match parts.next() {
            None => Some(0),
            Some(p) => p.parse::<u32>().ok(),
        };
        match (major, minor) {
            (Some(1), Some(0)) => Ok(ProtocolVersion::V1_0),
            (Some(0), Some(3)) => Ok(ProtocolVersion::V0_3),
            _ => Err(s.to_owned()),
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_parsing_follows_the_spec() {
        assert_eq!(
            ProtocolVersion::from_header(None),
            Ok(ProtocolVersion::V0_3)
        );
        assert_eq!(
            ProtocolVersion::from_header(Some(" ")),
            Ok(ProtocolVersion::V0_3)
        );
        for v in ["1.0", "1", "1.0.2"] {
            assert_eq!(
                ProtocolVersion::from_header(Some(v)),
                Ok(ProtocolVersion::V1_0)
            );
        }
        for v in ["0.3", "0.3.0"] {
            assert_eq!(
                ProtocolVersion::from_header(Some(v)),
                Ok(ProtocolVersion::V0_3)
            );
        }
        for v in ["0.2", "1.1", "2.0", "x"] {
            assert_eq!(ProtocolVersion::from_header(Some(v)), Err(v.to_owned()));
        }
    }
}
