//! The walk of one streamed token of a `SendStreamingMessage` (A2A 1.0,
//! JSON-RPC over HTTP, `looopy serve` with the memory stores) from the
//! socket to the model and back, as a table of the files it passes
//! through, in order, read from the code.

use std::collections::BTreeSet;

/// One step of the walk: a file the request or the token passes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Step {
    /// The crate's directory name under `crates/`.
    pub(super) krate: &'static str,
    /// The file, under the crate's `src/`.
    pub(super) file: &'static str,
    /// What happens there.
    pub(super) what: &'static str,
}

/// What a walk adds up to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counted {
    /// Distinct files.
    pub(super) files: usize,
    /// Distinct crates.
    pub(super) crates: usize,
    /// Steps whose crate differs from the step before.
    pub(super) crossings: usize,
}

/// Counts a walk's distinct files, crates and crate-border crossings.
pub(super) fn count(steps: &[Step]) -> Counted {
    let files: BTreeSet<(&str, &str)> = steps.iter().map(|s| (s.krate, s.file)).collect();
    let crates: BTreeSet<&str> = steps.iter().map(|s| s.krate).collect();
    let crossings = steps
        .windows(2)
        .filter(|w| w[0].krate != w[1].krate)
        .count();
    Counted {
        files: files.len(),
        crates: crates.len(),
        crossings,
    }
}

/// The walk as the code runs it today: the request from the socket to the
/// model call, then one text token from the model's response back to the
/// client's socket. A file is listed each time the walk enters it from
/// another file; trait calls are listed in the crate that declares the
/// trait (`looopy-core`), since that is where a reader goes to follow them.
pub(super) const STEPS: &[Step] = &[
    Step {
        krate: "looopy-a2a",
        file: "server/mod.rs",
        what: "`A2aServer::serve` accepts the connection; axum hands the request to the router",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/router.rs",
        what: "`rpc`: content type, body limit, authentication, `A2A-Version`, JSON-RPC envelope",
    },
    Step {
        krate: "looopy-a2a",
        file: "version.rs",
        what: "the protocol version negotiated from the header",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/dispatch.rs",
        what: "`dispatch` → `call` → `stream`: the method looked up by name, params checked",
    },
    Step {
        krate: "looopy-a2a",
        file: "wire/mod.rs",
        what: "`decode_send_params`: the version's decoder is chosen",
    },
    Step {
        krate: "looopy-a2a",
        file: "wire/v1.rs",
        what: "the 1.0 `SendMessageRequest` decoded into the neutral model",
    },
    Step {
        krate: "looopy-a2a",
        file: "model.rs",
        what: "`SendParams`, the neutral request",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/tasks/mod.rs",
        what: "`Tasks::start`: the task record, the `task` event logged, the turn spawned (`drive`)",
    },
    Step {
        krate: "looopy-core",
        file: "store.rs",
        what: "`TaskRecordStore` / `EventLog` traits the server calls",
    },
    Step {
        krate: "looopy-stores-memory",
        file: "task_records.rs",
        what: "the task record is put",
    },
    Step {
        krate: "looopy-stores-memory",
        file: "events.rs",
        what: "the `task` event is appended",
    },
    Step {
        krate: "looopy-a2a",
        file: "runner.rs",
        what: "`TurnRunner::run_turn` with a `TurnRequest`",
    },
    Step {
        krate: "looopy-a2a",
        file: "agent_runner.rs",
        what: "`AgentRunner::run_turn`: the context's Agent, `TurnOptions`, `execute_turn_with`",
    },
    Step {
        krate: "looopy-agent",
        file: "turn.rs",
        what: "`execute_turn_with`: busy check, `begin`, `launch`",
    },
    Step {
        krate: "looopy-agent",
        file: "start.rs",
        what: "`begin`: the lease, the stored history, the user message",
    },
    Step {
        krate: "looopy-agent",
        file: "driver.rs",
        what: "the turn's run: `TurnInput` built, `AgentLoop::start_turn_with`",
    },
    Step {
        krate: "looopy-loop",
        file: "lib.rs",
        what: "`start_turn_with`: the event queue and `TurnStream` made",
    },
    Step {
        krate: "looopy-loop",
        file: "turn/mod.rs",
        what: "the turn's iterations: the model is called",
    },
    Step {
        krate: "looopy-loop",
        file: "model_call.rs",
        what: "`call_model`: the `LlmRequest`, `llm.stream(..)`",
    },
    Step {
        krate: "looopy-loop",
        file: "layers/retry.rs",
        what: "`RetryingLlm` around the model",
    },
    Step {
        krate: "looopy-agent",
        file: "window.rs",
        what: "`WindowedLlm`: the sliding window applied to the request",
    },
    Step {
        krate: "looopy-core",
        file: "llm.rs",
        what: "the `LlmProvider::stream` trait call",
    },
    Step {
        krate: "looopy-llm-litellm",
        file: "client.rs",
        what: "`LiteLlmProvider::stream` → `chat_stream`",
    },
    Step {
        krate: "looopy-llm-litellm",
        file: "stream.rs",
        what: "the HTTP request sent, the body read as it comes",
    },
    Step {
        krate: "looopy-llm-litellm",
        file: "wire.rs",
        what: "`ChatRequest` serialised; each `ChatChunk` deserialised",
    },
    Step {
        krate: "looopy-llm-litellm",
        file: "sse.rs",
        what: "the model's server-sent events parsed from the bytes",
    },
    Step {
        krate: "looopy-llm-litellm",
        file: "decode.rs",
        what: "`ChunkDecoder`: the chunk becomes an `LlmChunk` (the token)",
    },
    Step {
        krate: "looopy-core",
        file: "llm.rs",
        what: "`LlmChunk`, folded by `ResponseAssembler`",
    },
    Step {
        krate: "looopy-loop",
        file: "layers/retry.rs",
        what: "the chunk passes the retry layer's stream",
    },
    Step {
        krate: "looopy-agent",
        file: "window.rs",
        what: "and the window's",
    },
    Step {
        krate: "looopy-loop",
        file: "model_call.rs",
        what: "the text chunk becomes an `artifact-update` (held one chunk back)",
    },
    Step {
        krate: "looopy-loop",
        file: "events.rs",
        what: "the event's constructor and `Emitter`",
    },
    Step {
        krate: "looopy-core",
        file: "event.rs",
        what: "`AgentEvent` / `EventPayload::ArtifactUpdate`",
    },
    Step {
        krate: "looopy-loop",
        file: "queue.rs",
        what: "`EventQueue`: the event waits for the stream's poll",
    },
    Step {
        krate: "looopy-loop",
        file: "stream.rs",
        what: "`TurnStream` yields it",
    },
    Step {
        krate: "looopy-agent",
        file: "driver.rs",
        what: "the Agent's turn stream records the artifact and forwards the event",
    },
    Step {
        krate: "looopy-agent",
        file: "turn.rs",
        what: "the Agent's `TurnRun` stream hands it to its reader",
    },
    Step {
        krate: "looopy-a2a",
        file: "agent_runner.rs",
        what: "`TurnEvents`, the boxed stream the server drains",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/tasks/mod.rs",
        what: "`drain` (the `ready` list) → `on_event`: ids restamped, logged",
    },
    Step {
        krate: "looopy-core",
        file: "store.rs",
        what: "the `EventLog::append` call",
    },
    Step {
        krate: "looopy-stores-memory",
        file: "events.rs",
        what: "the event appended; followers woken",
    },
    Step {
        krate: "looopy-core",
        file: "store/follow.rs",
        what: "`follow`: the log read after the last id",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/sse.rs",
        what: "`forward` → the stream's `Queue` → `items`",
    },
    Step {
        krate: "looopy-a2a",
        file: "wire/mod.rs",
        what: "`stream_result`: the version's encoder is chosen",
    },
    Step {
        krate: "looopy-a2a",
        file: "wire/v1_stream.rs",
        what: "the 1.0 `TaskArtifactUpdateEvent` written as JSON",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/sse.rs",
        what: "`frame`: the `data:` line, written to the socket by axum",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    const fn step(krate: &'static str, file: &'static str) -> Step {
        Step {
            krate,
            file,
            what: "",
        }
    }

    #[test]
    fn files_are_counted_once_and_every_change_of_crate_is_a_crossing() {
        let walk = [
            step("a", "x.rs"),
            step("a", "y.rs"),
            step("b", "z.rs"),
            step("a", "y.rs"),
            step("c", "x.rs"),
        ];
        assert_eq!(
            count(&walk),
            Counted {
                files: 4,
                crates: 3,
                crossings: 3
            }
        );
        assert_eq!(
            count(&[]),
            Counted {
                files: 0,
                crates: 0,
                crossings: 0
            }
        );
    }
}
