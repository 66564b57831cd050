//! The OpenAPI 3.1 document's fixed parts: info, the error schema and the two ways to present
//! an access token. Paths come from the route table (`routes::build`), served at
//! `/api/openapi.json`.

use utoipa::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};

use crate::error::{ErrorBody, ErrorDetail};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "ramen API",
        description = "Host MCP servers for teams. Errors are `{\"error\":{\"code\",\"message\",\"details\"}}`; \
                       every response carries `x-request-id`. `x-ramen-access` on each operation says who may call it."
    ),
    components(schemas(ErrorBody, ErrorDetail))
)]
struct ApiDoc;

pub fn base() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    let components = doc.components.get_or_insert_default();
    let bearer = HttpBuilder::new()
        .scheme(HttpAuthScheme::Bearer)
        .bearer_format("JWT")
        .description(Some("Access token from POST /api/auth/login or /api/auth/refresh."))
        .build();
    components.add_security_scheme("bearer", SecurityScheme::Http(bearer));
    let cookie = ApiKeyValue::with_description(
        crate::caller::ACCESS_COOKIE,
        "Console session cookie; state-changing requests also send the `ramen_csrf` cookie's value in `x-csrf-token`.",
    );
    components.add_security_scheme("cookie", SecurityScheme::ApiKey(ApiKey::Cookie(cookie)));
    doc
}
