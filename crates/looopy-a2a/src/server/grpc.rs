//! The gRPC binding of A2A 1.0 (spec §10; cargo feature `grpc`): the
//! official service (`lf.a2a.v1.A2AService`, generated types and tonic
//! server trait of the `a2a-pb` crate) on the server's own port (HTTP/2),
//! running the same operations as JSON-RPC and HTTP+JSON
//! ([`Service`](crate::server::service::Service)).
//!
//! The caller, version and extensions are read by the same extractors as
//! HTTP+JSON ([`Call`]), in a layer in front of the tonic service that
//! hands the [`Call`] on in the request's extensions; a refused request
//! gets its gRPC status there. Errors are `google.rpc.Status` with the
//! code of spec §5.4 and the `ErrorInfo` in the details
//! (`From<RpcError> for tonic::Status`).

use std::pin::Pin;
use std::sync::Arc;

use a2a_pb::a2a_service_server::{A2aService, A2aServiceServer};
use a2a_pb::{pbconv, proto};
use axum::extract::{Request as HttpRequest, State};
use axum::middleware::{self, Next};
use axum::response::Response as HttpResponse;
use futures::{Stream, StreamExt, stream};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tonic::{Request, Response, Status};
use tower::ServiceBuilder;

use crate::RpcError;
use crate::server::extract::LastEventId;
use crate::server::layers::RequestSpanLayer;
use crate::server::push;
use crate::server::service::Call;
use crate::server::sse::{self, Opened};
use crate::server::state::ServerState;
use crate::trace;
use crate::version::ProtocolVersion;
use crate::wire::{self, StreamResult};

const V1: ProtocolVersion = ProtocolVersion::V1_0;

/// The service's routes (`/lf.a2a.v1.A2AService/*`), to merge into the
/// server's router (only that path: tonic's own router would also answer
/// every unknown path, with a gRPC status instead of a 404). Messages over
/// the server's body limit are refused by tonic (`RESOURCE_EXHAUSTED`).
pub(crate) fn routes(state: Arc<ServerState>) -> axum::Router<Arc<ServerState>> {
    let service = A2aServiceServer::new(Grpc {
        state: state.clone(),
    })
    .max_decoding_message_size(state.max_body_bytes);
    let path = format!(
        "/{}/{{*method}}",
        <A2aServiceServer<Grpc> as tonic::server::NamedService>::NAME
    );
    let service = ServiceBuilder::new()
        .layer(RequestSpanLayer::new("grpc"))
        .layer(middleware::from_fn_with_state(state, call_layer))
        .service(service);
    axum::Router::new().route_service(&path, service)
}

/// Reads the [`Call`] of a request for the service methods, or answers
/// with the status of the refusal.
async fn call_layer(
    State(_state): State<Arc<ServerState>>,
    call: Result<Call, RpcError>,
    last_event_id: LastEventId,
    mut request: HttpRequest,
    next: Next,
) -> HttpResponse {
    match call {
        Ok(call) => {
            request.extensions_mut().insert(call);
            request.extensions_mut().insert(last_event_id);
            next.run(request).await
        }
        Err(e) => Status::from(e).into_http(),
    }
}

/// The [`Call`] [`call_layer`] read, and the operation on the request's span.
fn call_of<T>(request: &mut Request<T>, operation: &str) -> Result<Call, Status> {
    trace::record_operation(operation, V1);
    request
        .extensions_mut()
        .remove::<Call>()
        .ok_or_else(|| Status::internal("the request did not pass the call layer"))
}

/// An official request type as the 1.0 JSON params the wire readers take.
fn params<T: Serialize>(request: &T) -> Result<Value, Status> {
    let mut params = serde_json::to_value(request).map_err(internal)?;
    wire::normalize_params(V1, &mut params);
    Ok(params)
}

fn internal(e: impl std::fmt::Display) -> Status {
    Status::from(RpcError::internal(e))
}

/// A JSON result read into an official type.
fn read<T: DeserializeOwned>(value: Value) -> Result<T, Status> {
    serde_json::from_value(value).map_err(internal)
}

type Responses = Pin<Box<dyn Stream<Item = Result<proto::StreamResponse, Status>> + Send>>;

fn stream_response(
    result: Result<StreamResult, RpcError>,
) -> Result<proto::StreamResponse, Status> {
    match result? {
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
    fn responses(&self, opened: Opened) -> Responses {
        match opened {
            Opened::Single(v) => Box::pin(stream::once(async move { stream_response(Ok(v)) })),
            Opened::Follow(spec) => {
                let items =
                    sse::items(self.state.tasks.clone(), *spec, self.state.shutdown.clone());
                Box::pin(items.map(|item| stream_response(item.result)))
            }
        }
    }

    fn task(task: &crate::model::TaskSnapshot) -> Result<proto::Task, Status> {
        let task: a2a::Task = read(wire::encode_task(V1, task))?;
        Ok(pbconv::to_proto_task(&task))
    }

    fn config(
        config: &looopy_core::store::PushConfig,
    ) -> Result<proto::TaskPushNotificationConfig, Status> {
        let config: a2a::TaskPushNotificationConfig = read(push::encode(V1, config))?;
        Ok(pbconv::to_proto_task_push_notification_config(&config))
    }
}

#[tonic::async_trait]
impl A2aService for Grpc {
    async fn send_message(
        &self,
        mut request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<proto::SendMessageResponse>, Status> {
        let call = call_of(&mut request, "SendMessage")?;
        let p = params(&pbconv::from_proto_send_message_request(request.get_ref()))?;
        let response = self
            .state
            .service()
            .send_message(&call, wire::decode_send_params(V1, p)?)
            .await?;
        let r: a2a::SendMessageResponse = read(wire::encode_send_response(V1, &response))?;
        Ok(Response::new(pbconv::to_proto_send_message_response(&r)))
    }

    type SendStreamingMessageStream = Responses;

    async fn send_streaming_message(
        &self,
        mut request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<Responses>, Status> {
        let call = call_of(&mut request, "SendStreamingMessage")?;
        let p = params(&pbconv::from_proto_send_message_request(request.get_ref()))?;
        let opened = self
            .state
            .service()
            .send_streaming_message(&call, wire::decode_send_params(V1, p)?)
            .await?;
        Ok(Response::new(self.responses(opened)))
    }

    async fn get_task(
        &self,
        mut request: Request<proto::GetTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        let call = call_of(&mut request, "GetTask")?;
        let p = params(&pbconv::from_proto_get_task_request(request.get_ref()))?;
        let task = self
            .state
            .service()
            .get_task(&call, wire::decode_task_query(V1, p)?)
            .await?;
        Ok(Response::new(Self::task(&task)?))
    }

    async fn list_tasks(
        &self,
        mut request: Request<proto::ListTasksRequest>,
    ) -> Result<Response<proto::ListTasksResponse>, Status> {
        let call = call_of(&mut request, "ListTasks")?;
        let p = params(&pbconv::from_proto_list_tasks_request(request.get_ref()))?;
        let page = self
            .state
            .service()
            .list_tasks(&call, wire::decode_list_query(p)?)
            .await?;
        let r: a2a::ListTasksResponse = read(wire::encode_list(
            &page.tasks,
            page.next,
            page.page_size,
            page.total,
        ))?;
        Ok(Response::new(pbconv::to_proto_list_tasks_response(&r)))
    }

    async fn cancel_task(
        &self,
        mut request: Request<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        let call = call_of(&mut request, "CancelTask")?;
        let p = params(&pbconv::from_proto_cancel_task_request(request.get_ref()))?;
        let task = self
            .state
            .service()
            .cancel_task(&call, wire::decode_task_query(V1, p)?)
            .await?;
        Ok(Response::new(Self::task(&task)?))
    }

    type SubscribeToTaskStream = Responses;

    async fn subscribe_to_task(
        &self,
        mut request: Request<proto::SubscribeToTaskRequest>,
    ) -> Result<Response<Responses>, Status> {
        let call = call_of(&mut request, "SubscribeToTask")?;
        let last_event_id = request
            .extensions_mut()
            .remove::<LastEventId>()
            .and_then(|LastEventId(id)| id);
        let p = params(&pbconv::from_proto_subscribe_to_task_request(
            request.get_ref(),
        ))?;
        let opened = self
            .state
            .service()
            .subscribe_to_task(&call, wire::decode_task_query(V1, p)?, last_event_id)
            .await?;
        Ok(Response::new(self.responses(opened)))
    }

    async fn create_task_push_notification_config(
        &self,
        mut request: Request<proto::TaskPushNotificationConfig>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        let call = call_of(&mut request, "CreateTaskPushNotificationConfig")?;
        let configs = self.state.service().push_configs()?;
        let p = params(
            &pbconv::from_proto_create_task_push_notification_config_request(request.get_ref()),
        )?;
        let (task_id, input) = push::decode_create(V1, p)?;
        let config = configs.create(&call, task_id, input).await?;
        Ok(Response::new(Self::config(&config)?))
    }

    async fn get_task_push_notification_config(
        &self,
        mut request: Request<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        let call = call_of(&mut request, "GetTaskPushNotificationConfig")?;
        let configs = self.state.service().push_configs()?;
        let p = params(
            &pbconv::from_proto_get_task_push_notification_config_request(request.get_ref()),
        )?;
        let q = push::decode_query(V1, p)?;
        let config = configs.get(&call, &q).await?;
        Ok(Response::new(Self::config(&config)?))
    }

    async fn list_task_push_notification_configs(
        &self,
        mut request: Request<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<proto::ListTaskPushNotificationConfigsResponse>, Status> {
        let call = call_of(&mut request, "ListTaskPushNotificationConfigs")?;
        let configs = self.state.service().push_configs()?;
        let p = params(
            &pbconv::from_proto_list_task_push_notification_configs_request(request.get_ref()),
        )?;
        let q = push::decode_query(V1, p)?;
        let list = configs.list(&call, &q).await?;
        let r: a2a::ListTaskPushNotificationConfigsResponse =
            read(push::encode_list(V1, &list, &q))?;
        Ok(Response::new(
            pbconv::to_proto_list_task_push_notification_configs_response(&r),
        ))
    }

    async fn get_extended_agent_card(
        &self,
        mut request: Request<proto::GetExtendedAgentCardRequest>,
    ) -> Result<Response<proto::AgentCard>, Status> {
        let call = call_of(&mut request, "GetExtendedAgentCard")?;
        let card: a2a::AgentCard = read(self.state.service().extended_agent_card(&call)?)?;
        Ok(Response::new(pbconv::to_proto_agent_card(&card)))
    }

    async fn delete_task_push_notification_config(
        &self,
        mut request: Request<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        let call = call_of(&mut request, "DeleteTaskPushNotificationConfig")?;
        let configs = self.state.service().push_configs()?;
        let p = params(
            &pbconv::from_proto_delete_task_push_notification_config_request(request.get_ref()),
        )?;
        let q = push::decode_query(V1, p)?;
        configs.delete(&call, q).await?;
        Ok(Response::new(()))
    }
}
