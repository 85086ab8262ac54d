//! A dataset run against `@copilotkit/aimock` through the Agent.
