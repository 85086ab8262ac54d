//! The gRPC binding of A2A 1.0 (spec §10; cargo feature `grpc`): the
//! official service (`lf.a2a.v1.A2AService`, generated types and tonic
//! server trait of the `a2a-pb` crate) on the server's own port (HTTP/2),
//! running every method through the same dispatch as JSON-RPC and
//! HTTP+JSON ([`dispatch::call`]): the proto request becomes the 1.0 JSON
//! params through the official `a2a-lf` types, the JSON result becomes the
//! proto response the same way. Errors are `google.rpc.Status` with the
//! code of spec §5.4 and the `ErrorInfo` in the details.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;

use a2a_pb::a2a_service_server::{A2aService, A2aServiceServer};
use a2a_pb::{pbconv, proto};
use futures::{Stream, StreamExt, stream};
use prost::Message as _;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tonic::metadata::MetadataMap;
use tonic::{Code, Request, Response, Status};
use tracing::Instrument;

use crate::RpcError;
use crate::jsonrpc::UNAUTHENTICATED;
use crate::server::ServerState;
use crate::server::dispatch::{self, Answer, Method, Opened, StreamOptions};
use crate::server::rest;
use crate::server::sse;
use crate::trace;
use crate::wire::StreamResult;

/// The service's routes (`/lf.a2a.v1.A2AService/*`), to merge into the
/// server's router (only that path: tonic's own router would also answer
/// every unknown path, with a gRPC status instead of a 404).
pub(crate) fn routes(state: Arc<ServerState>) -> axum::Router {
    let service = A2aServiceServer::new(Grpc { state });
    let path = format!(
        "/{}/{{*method}}",
        <A2aServiceServer<Grpc> as tonic::server::NamedService>::NAME
    );
    axum::Router::new().route_service(&path, service)
}

/// `google.rpc.ErrorInfo`.
#[derive(Clone, PartialEq, prost::Message)]
struct ErrorInfo {
    #[prost(string, tag = "1")]
    reason: String,
    #[prost(string, tag = "2")]
    domain: String,
    #[prost(map = "string, string", tag = "3")]
    metadata: HashMap<String, String>,
}

/// `google.rpc.Status`, the payload of `grpc-status-details-bin`.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
    #[prost(message, repeated, tag = "3")]
    details: Vec<prost_types::Any>,
}

/// The gRPC code of an error (spec §5.4; where it is silent: bad input
/// `INVALID_ARGUMENT`, an unknown method `UNIMPLEMENTED`, missing
/// credentials `UNAUTHENTICATED`, the rest `INTERNAL`).
fn code_of(e: &RpcError) -> Code {
    use a2a::error_code as c;
    match e.code {
        c::TASK_NOT_FOUND => Code::NotFound,
        c::TASK_NOT_CANCELABLE
        | c::EXTENDED_CARD_NOT_CONFIGURED
        | c::EXTENSION_SUPPORT_REQUIRED => Code::FailedPrecondition,
        c::PUSH_NOTIFICATION_NOT_SUPPORTED
        | c::UNSUPPORTED_OPERATION
        | c::VERSION_NOT_SUPPORTED
        | c::METHOD_NOT_FOUND => Code::Unimplemented,
        c::CONTENT_TYPE_NOT_SUPPORTED | c::PARSE_ERROR | c::INVALID_REQUEST | c::INVALID_PARAMS => {
            Code::InvalidArgument
        }
        UNAUTHENTICATED => Code::Unauthenticated,
        _ => Code::Internal,
    }
}

/// The error as a gRPC status, its `ErrorInfo` in the details.
fn status(e: &RpcError) -> Status {
    let code = code_of(e);
    let details = e
        .data
        .as_ref()
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|d| {
            let text = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            let metadata = d
                .get("metadata")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                        .collect()
                })
                .unwrap_or_default();
            let info = ErrorInfo {
                reason: text("reason"),
                domain: text("domain"),
                metadata,
            };
            prost_types::Any {
                type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
                value: info.encode_to_vec(),
            }
        })
        .collect();
    let body = RpcStatus {
        code: code as i32,
        message: e.message.clone(),
        details,
    };
    Status::with_details(code, e.message.clone(), body.encode_to_vec().into())
}

fn internal(e: impl std::fmt::Display) -> Status {
    status(&RpcError::internal(e))
}

/// A JSON result read into an official type.
fn read<T: DeserializeOwned>(value: Value) -> Result<T, Status> {
    serde_json::from_value(value).map_err(internal)
}

fn value(answer: Answer) -> Result<Value, Status> {
    match answer {
        Answer::Value(v) => Ok(v),
        Answer::Stream(_) => Err(internal("a unary method answered with a stream")),
    }
}

type Responses = Pin<Box<dyn Stream<Item = Result<proto::StreamResponse, Status>> + Send>>;

fn stream_response(
    result: Result<StreamResult, RpcError>,
) -> Result<proto::StreamResponse, Status> {
    match result.map_err(|e| status(&e))? {
        // A 1.0 item is already the official type: no trip through JSON.
        StreamResult::V1(r) => Ok(pbconv::to_proto_stream_response(&r)),
        other => {
            let r: a2a::StreamResponse = read(other.to_value())?;
            Ok(pbconv::to_proto_stream_response(&r))
        }
    }
}

struct Grpc {
    state: Arc<ServerState>,
}

impl Grpc {
    /// Runs one method: credentials and version from the metadata (as
    /// HTTP headers), the request as 1.0 JSON params.
    async fn call<T: Serialize>(
        &self,
        metadata: &MetadataMap,
        method: Method,
        name: &'static str,
        request: &T,
    ) -> Result<Answer, Status> {
        let headers = metadata.clone().into_headers();
        let auth = self
            .state
            .auth
            .authenticate(&headers)
            .ok_or_else(|| status(&RpcError::unauthenticated()))?;
        let version = rest::version(&headers, &[]).map_err(|e| status(&e))?;
        let params = serde_json::to_value(request).map_err(internal)?;
        let options = StreamOptions::of(&self.state, method, &headers);
        let span = trace::request_span(name, version, &headers);
        dispatch::call(&self.state, &auth, version, method, name, params, options)
            .instrument(span)
            .await
            .map_err(|e| status(&e))
    }

    fn responses(&self, answer: Answer) -> Result<Responses, Status> {
        match answer {
            Answer::Stream(Opened::Single(v)) => {
                Ok(Box::pin(stream::once(
                    async move { stream_response(Ok(v)) },
                )))
            }
            Answer::Stream(Opened::Follow(spec)) => {
                let items =
                    sse::items(self.state.tasks.clone(), *spec, self.state.shutdown.clone());
                Ok(Box::pin(items.map(|item| stream_response(item.result))))
            }
            Answer::Value(_) => Err(internal("a streaming method answered with a value")),
        }
    }
}

#[tonic::async_trait]
impl A2aService for Grpc {
    async fn send_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<proto::SendMessageResponse>, Status> {
        let params = pbconv::from_proto_send_message_request(request.get_ref());
        let answer = self
            .call(request.metadata(), Method::Send, "SendMessage", &params)
            .await?;
        let r: a2a::SendMessageResponse = read(value(answer)?)?;
        Ok(Response::new(pbconv::to_proto_send_message_response(&r)))
    }

    type SendStreamingMessageStream = Responses;

    async fn send_streaming_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<Responses>, Status> {
        let params = pbconv::from_proto_send_message_request(request.get_ref());
        let answer = self
            .call(
                request.metadata(),
                Method::Stream,
                "SendStreamingMessage",
                &params,
            )
            .await?;
        Ok(Response::new(self.responses(answer)?))
    }

    async fn get_task(
        &self,
        request: Request<proto::GetTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        let params = pbconv::from_proto_get_task_request(request.get_ref());
        let answer = self
            .call(request.metadata(), Method::GetTask, "GetTask", &params)
            .await?;
        let task: a2a::Task = read(value(answer)?)?;
        Ok(Response::new(pbconv::to_proto_task(&task)))
    }

    async fn list_tasks(
        &self,
        request: Request<proto::ListTasksRequest>,
    ) -> Result<Response<proto::ListTasksResponse>, Status> {
        let params = pbconv::from_proto_list_tasks_request(request.get_ref());
        let answer = self
            .call(request.metadata(), Method::ListTasks, "ListTasks", &params)
            .await?;
        let r: a2a::ListTasksResponse = read(value(answer)?)?;
        Ok(Response::new(pbconv::to_proto_list_tasks_response(&r)))
    }

    async fn cancel_task(
        &self,
        request: Request<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        let params = pbconv::from_proto_cancel_task_request(request.get_ref());
        let answer = self
            .call(request.metadata(), Method::Cancel, "CancelTask", &params)
            .await?;
        let task: a2a::Task = read(value(answer)?)?;
        Ok(Response::new(pbconv::to_proto_task(&task)))
    }

    type SubscribeToTaskStream = Responses;

    async fn subscribe_to_task(
        &self,
        request: Request<proto::SubscribeToTaskRequest>,
    ) -> Result<Response<Responses>, Status> {
        let params = pbconv::from_proto_subscribe_to_task_request(request.get_ref());
        let answer = self
            .call(
                request.metadata(),
                Method::Subscribe,
                "SubscribeToTask",
                &params,
            )
            .await?;
        Ok(Response::new(self.responses(answer)?))
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<proto::TaskPushNotificationConfig>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        let params =
            pbconv::from_proto_create_task_push_notification_config_request(request.get_ref());
        let answer = self
            .call(
                request.metadata(),
                Method::PushConfig,
                "CreateTaskPushNotificationConfig",
                &params,
            )
            .await?;
        let config: a2a::TaskPushNotificationConfig = read(value(answer)?)?;
        Ok(Response::new(
            pbconv::to_proto_task_push_notification_config(&config),
        ))
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        let params =
            pbconv::from_proto_get_task_push_notification_config_request(request.get_ref());
        let answer = self
            .call(
                request.metadata(),
                Method::PushConfig,
                "GetTaskPushNotificationConfig",
                &params,
            )
            .await?;
        let config: a2a::TaskPushNotificationConfig = read(value(answer)?)?;
        Ok(Response::new(
            pbconv::to_proto_task_push_notification_config(&config),
        ))
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<proto::ListTaskPushNotificationConfigsResponse>, Status> {
        let params =
            pbconv::from_proto_list_task_push_notification_configs_request(request.get_ref());
        let answer = self
            .call(
                request.metadata(),
                Method::PushConfig,
                "ListTaskPushNotificationConfigs",
                &params,
            )
            .await?;
        let r: a2a::ListTaskPushNotificationConfigsResponse = read(value(answer)?)?;
        Ok(Response::new(
            pbconv::to_proto_list_task_push_notification_configs_response(&r),
        ))
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<proto::GetExtendedAgentCardRequest>,
    ) -> Result<Response<proto::AgentCard>, Status> {
        let params = pbconv::from_proto_get_extended_agent_card_request(request.get_ref());
        let answer = self
            .call(
                request.metadata(),
                Method::ExtendedCard,
                "GetExtendedAgentCard",
                &params,
            )
            .await?;
        let card: a2a::AgentCard = read(value(answer)?)?;
        Ok(Response::new(pbconv::to_proto_agent_card(&card)))
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        let params =
            pbconv::from_proto_delete_task_push_notification_config_request(request.get_ref());
        self.call(
            request.metadata(),
            Method::PushConfig,
            "DeleteTaskPushNotificationConfig",
            &params,
        )
        .await?;
        Ok(Response::new(()))
    }
}
