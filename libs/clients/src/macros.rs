//! One client trait per service and its gRPC implementation, generated from a list of RPCs so
//! the two cannot drift: every method takes the caller it is made for and the request message,
//! and answers the response message or an [`UpstreamError`](crate::UpstreamError).

/// How long a call may take: [`CALL_TIMEOUT`](crate::CALL_TIMEOUT) unless the request says it
/// waits for something longer (a rollout, a reload).
pub trait CallBudget {
    fn budget(&self) -> std::time::Duration {
        crate::CALL_TIMEOUT
    }
}

macro_rules! client {
    (
        $(#[$meta:meta])*
        trait $trait:ident, grpc $grpc:ident, service $service:literal,
        proto $client:path;
        $( $(#[$mmeta:meta])* fn $method:ident($req:ty) -> $resp:ty; )*
    ) => {
        $(#[$meta])*
        #[async_trait::async_trait]
        pub trait $trait: Send + Sync + 'static {
            $(
                $(#[$mmeta])*
                async fn $method(
                    &self,
                    caller: &ramen_access::Caller,
                    request: $req,
                ) -> Result<$resp, $crate::UpstreamError>;
            )*
        }

        #[doc = concat!("[`", stringify!($trait), "`] over gRPC (`", $service, "`).")]
        #[derive(Clone)]
        pub struct $grpc {
            client: $client,
        }

        impl $grpc {
            pub fn new(channel: $crate::Signed) -> Self {
                Self { client: <$client>::new(channel) }
            }

            /// A lazily connected client of the service at `url`, its tickets signed for
            /// that service (the audience is the service's name).
            pub fn connect_lazy(
                url: &str,
                keys: std::sync::Arc<ramen_access::TicketKeys>,
            ) -> Result<Self, $crate::UpstreamError> {
                Ok(Self::new($crate::connect_lazy(url, None, keys, $service)?))
            }
        }

        #[async_trait::async_trait]
        impl $trait for $grpc {
            $(
                async fn $method(
                    &self,
                    caller: &ramen_access::Caller,
                    request: $req,
                ) -> Result<$resp, $crate::UpstreamError> {
                    use $crate::CallBudget;
                    let budget = request.budget();
                    let mut request = caller.request(request);
                    request.set_timeout(budget);
                    self.client
                        .clone()
                        .$method(request)
                        .await
                        .map(tonic::Response::into_inner)
                        .map_err(|status| $crate::UpstreamError::from_status($service, status))
                }
            )*
        }
    };
}

pub(crate) use client;
