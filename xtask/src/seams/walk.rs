//! The walk of one streamed token of a `SendStreamingMessage` (A2A 1.0,
//! JSON-RPC over HTTP, `looopy serve` with the memory stores) from the
//! socket to the model and back, as a table of the files it passes
//! through, in order, read from the code.

use std::collections::BTreeSet;
use std::path::Path;

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

/// The files of `steps` that do not exist under the workspace `root`, as
/// paths from it.
pub(super) fn missing(root: &Path, steps: &[Step]) -> Vec<String> {
    steps
        .iter()
        .map(|s| format!("crates/{}/src/{}", s.krate, s.file))
        .filter(|p| !root.join(p).is_file())
        .collect()
}

/// The walk as the code runs it today: the request from the socket to the
/// model call, then one text token from the model's response back to the
/// client's socket. A file is listed each time the walk enters it from
/// another file and runs code there (a type only named is not a step); a
/// call through a trait object goes straight to the implementation it
/// reaches, and is a step in the file that declares the trait (in
/// `looopy-core`) only when code runs there (a default method, a
/// forwarding `impl` for `Arc`). The set-up that runs once
/// per server (building the Agent template, the stores) is not part of it.
pub(super) const STEPS: &[Step] = &[
    Step {
        krate: "looopy-a2a",
        file: "server/mod.rs",
        what: "`A2aServer::serve` accepts the connection; axum routes the request",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/extract.rs",
        what: "the extractors: caller, version, extensions, the body (content type, limit)",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/auth.rs",
        what: "the request authenticated",
    },
    Step {
        krate: "looopy-a2a",
        file: "jsonrpc.rs",
        what: "the JSON-RPC envelope parsed",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/rpc.rs",
        what: "`Operation::lookup`, `resolve`: the method looked up by its name",
    },
    Step {
        krate: "looopy-a2a",
        file: "version.rs",
        what: "in the version the `A2A-Version` header names",
    },
    Step {
        krate: "looopy-a2a",
        file: "wire/mod.rs",
        what: "`normalize_params`",
    },
    Step {
        krate: "looopy-a2a",
        file: "trace.rs",
        what: "the request span",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/rpc.rs",
        what: "`endpoint`: the params read in the request's version",
    },
    Step {
        krate: "looopy-a2a",
        file: "wire/mod.rs",
        what: "`decode_send_params`: the version's decoder",
    },
    Step {
        krate: "looopy-a2a",
        file: "wire/v1.rs",
        what: "the 1.0 request decoded",
    },
    Step {
        krate: "looopy-a2a",
        file: "model.rs",
        what: "into the neutral `SendParams`",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/service.rs",
        what: "`Service::send_streaming_message`: `check_message`, `direct_reply`",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/push/methods.rs",
        what: "`push::inline` (no push config on this request)",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/tasks/mod.rs",
        what: "`Tasks::start`: the turn registered, the submission logged",
    },
    Step {
        krate: "looopy-stores-memory",
        file: "task_records.rs",
        what: "the task record put",
    },
    Step {
        krate: "looopy-stores-memory",
        file: "events.rs",
        what: "the `task` event appended",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/tasks/mod.rs",
        what: "the turn spawned: `drive`",
    },
    Step {
        krate: "looopy-a2a",
        file: "runner.rs",
        what: "`TurnRunner::run_turn` with a `TurnRequest`",
    },
    Step {
        krate: "looopy-a2a",
        file: "agent_runner.rs",
        what: "the context's Agent, `TurnOptions`, `execute_turn_with`",
    },
    Step {
        krate: "looopy-agent",
        file: "turn.rs",
        what: "`execute_turn_with`: the busy check",
    },
    Step {
        krate: "looopy-agent",
        file: "start.rs",
        what: "`begin`: the lease and the stored state",
    },
    Step {
        krate: "looopy-agent",
        file: "client.rs",
        what: "`prepare_input`: the user message checked against open tool calls",
    },
    Step {
        krate: "looopy-core",
        file: "store/turn.rs",
        what: "`TurnStore::begin_turn` → `begin_separately`",
    },
    Step {
        krate: "looopy-stores-memory",
        file: "locks.rs",
        what: "the turn lease taken",
    },
    Step {
        krate: "looopy-agent",
        file: "lease.rs",
        what: "the lease kept, its renewal set up",
    },
    Step {
        krate: "looopy-agent",
        file: "turn.rs",
        what: "`launch`: the `AgentTurn`, its driver and the buffer between them",
    },
    Step {
        krate: "looopy-agent",
        file: "driver.rs",
        what: "`TurnInput` built, `AgentLoop::start_turn_with`",
    },
    Step {
        krate: "looopy-loop",
        file: "lib.rs",
        what: "`start_turn_with`: the loop's event queue, the `TurnStream`",
    },
    Step {
        krate: "looopy-loop",
        file: "turn/mod.rs",
        what: "the turn and its first iteration",
    },
    Step {
        krate: "looopy-loop",
        file: "model_call.rs",
        what: "`call_model`: the `LlmRequest`, `llm.stream(..)`",
    },
    Step {
        krate: "looopy-loop",
        file: "layers/retry.rs",
        what: "`RetryingLlm`",
    },
    Step {
        krate: "looopy-loop",
        file: "layers/record.rs",
        what: "`RecordingLlm`: the request kept for the turn's execution record",
    },
    Step {
        krate: "looopy-agent",
        file: "window.rs",
        what: "`WindowedLlm`: the sliding window (its stream passes through untouched unless it counts tokens)",
    },
    Step {
        krate: "looopy-core",
        file: "llm/provider.rs",
        what: "the `LlmProvider::stream` call",
    },
    Step {
        krate: "looopy-llm-litellm",
        file: "provider.rs",
        what: "`LiteLlmProvider::stream` → `chat_stream`",
    },
    Step {
        krate: "looopy-llm-litellm",
        file: "stream.rs",
        what: "the HTTP request",
    },
    Step {
        krate: "looopy-llm-litellm",
        file: "tools_json.rs",
        what: "the tools' JSON",
    },
    Step {
        krate: "looopy-llm-litellm",
        file: "wire.rs",
        what: "`ChatRequest` serialised; the body read as it comes",
    },
    Step {
        krate: "looopy-llm-litellm",
        file: "stream.rs",
        what: "the response's bytes",
    },
    Step {
        krate: "looopy-core",
        file: "provider/sse.rs",
        what: "the model's server-sent events parsed (`SseParser`)",
    },
    Step {
        krate: "looopy-llm-litellm",
        file: "wire.rs",
        what: "a `ChatChunk` deserialised",
    },
    Step {
        krate: "looopy-llm-litellm",
        file: "decode.rs",
        what: "`ChunkDecoder`: the token as an `LlmChunk`",
    },
    Step {
        krate: "looopy-loop",
        file: "layers/record.rs",
        what: "the record layer's, which folds the chunk for the record",
    },
    Step {
        krate: "looopy-core",
        file: "llm.rs",
        what: "`ResponseAssembler::push`",
    },
    Step {
        krate: "looopy-loop",
        file: "layers/record.rs",
        what: "the chunk passed on",
    },
    Step {
        krate: "looopy-loop",
        file: "layers/retry.rs",
        what: "and the retry layer's",
    },
    Step {
        krate: "looopy-loop",
        file: "model_call.rs",
        what: "the chunk folded (`ResponseAssembler`) and held one chunk back",
    },
    Step {
        krate: "looopy-core",
        file: "llm.rs",
        what: "`ResponseAssembler`",
    },
    Step {
        krate: "looopy-loop",
        file: "model_call.rs",
        what: "`emit.text_chunk`",
    },
    Step {
        krate: "looopy-loop",
        file: "events.rs",
        what: "the `artifact-update` built (`Emitter`)",
    },
    Step {
        krate: "looopy-core",
        file: "event.rs",
        what: "`AgentEvent::new` around `EventPayload::ArtifactUpdate`",
    },
    Step {
        krate: "looopy-loop",
        file: "queue.rs",
        what: "the loop's `EventQueue`",
    },
    Step {
        krate: "looopy-loop",
        file: "stream.rs",
        what: "`TurnStream` yields it",
    },
    Step {
        krate: "looopy-agent",
        file: "driver.rs",
        what: "the Agent's driver reads it and hands it over",
    },
    Step {
        krate: "looopy-agent",
        file: "turn.rs",
        what: "into the driver's `Handoff`; `AgentTurn` yields it",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/tasks/mod.rs",
        what: "`drain` (its `ready` list) → `on_event`: logged",
    },
    Step {
        krate: "looopy-stores-memory",
        file: "events.rs",
        what: "appended; the followers woken",
    },
    Step {
        krate: "looopy-core",
        file: "store/follow.rs",
        what: "`follow`: the log read after the last id",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/sse.rs",
        what: "`forward`: the stream's queue",
    },
    Step {
        krate: "looopy-a2a",
        file: "wire/mod.rs",
        what: "`update_result`: the version's encoder",
    },
    Step {
        krate: "looopy-a2a",
        file: "wire/v1_stream.rs",
        what: "the 1.0 `TaskArtifactUpdateEvent` as JSON",
    },
    Step {
        krate: "looopy-a2a",
        file: "wire/mod.rs",
        what: "`StreamResult::write_frame`",
    },
    Step {
        krate: "looopy-a2a",
        file: "server/sse.rs",
        what: "the `data:` frame; axum writes it to the socket",
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

    #[test]
    fn a_step_whose_file_is_gone_is_named() {
        let root = crate::util::root();
        let walk = [
            step("looopy-core", "lib.rs"),
            step("looopy-core", "no_such_file.rs"),
        ];
        assert_eq!(
            missing(&root, &walk),
            ["crates/looopy-core/src/no_such_file.rs"]
        );
    }
}
