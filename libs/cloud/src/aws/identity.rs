//! The placement's IAM role: assumed by the namespace's ServiceAccount through the cluster's
//! OIDC provider (IRSA), with the group's AWS service-account rules as its one inline policy,
//! and a permissions boundary made from the super admin's bounds: whatever the inline policy
//! says, IAM grants no more than the bounds allow (and never what they deny). Both also give
//! the workers their own reach into the platform's bucket: their group's prefix, nothing else.

use aws_sdk_iam::Client;
use aws_sdk_iam::types::Tag;
use ramen_grant_bounds::ProviderBounds;
use serde_json::json;

use super::errors::{code, sdk_error};
use super::url_decode;
use crate::{
    ATTEMPTS, CloudError, GROUP_TAG, Grant, MANAGED_BY, MANAGED_BY_TAG, Made, Outcome,
    PlacementRef, ZONE_TAG, names, pause,
};

/// The inline policy holding the group's rules.
pub const POLICY_NAME: &str = "ramen-group-rules";
/// The inline policy giving the workers their group's prefix of the platform's bucket.
pub const BLOB_POLICY_NAME: &str = "ramen-blob-access";
/// Where the roles' boundary policies live.
pub const BOUNDARY_PATH: &str = "/ramen/";
/// IAM keeps at most five versions of a managed policy.
const MAX_POLICY_VERSIONS: usize = 5;

/// The managed policy that bounds the role `role`.
pub fn boundary_name(role: &str) -> String {
    format!("{role}-boundary")
}

pub async fn ensure(
    iam: &Client,
    placement: &PlacementRef<'_>,
    grants: &[Grant],
    bounds: &ProviderBounds,
    bucket: &str,
) -> Result<Made, CloudError> {
    let name = names::role(placement.group, placement.zone);
    let trust = trust_policy(placement).to_string();
    let mut made = Vec::new();
    let boundary = boundary_policy(placement, bounds, bucket);
    let boundary_arn = ensure_boundary(iam, placement, &name, &boundary, &mut made).await?;
    let arn = match iam.get_role().role_name(&name).send().await {
        Ok(found) => {
            let role = found.role().ok_or_else(|| no_role(&name))?;
            refuse_unless_ours(&format!("IAM role {name}"), role.tags(), placement)?;
            let update = iam.update_assume_role_policy().role_name(&name).policy_document(&trust);
            update.send().await.map_err(|e| sdk_error("IAM", "UpdateAssumeRolePolicy", e))?;
            let current = role.permissions_boundary().and_then(|b| b.permissions_boundary_arn());
            if current != Some(boundary_arn.as_str()) {
                let put = iam
                    .put_role_permissions_boundary()
                    .role_name(&name)
                    .permissions_boundary(&boundary_arn);
                put.send().await.map_err(|e| sdk_error("IAM", "PutRolePermissionsBoundary", e))?;
                made.push("permissions boundary set".to_owned());
            }
            role.arn().to_owned()
        }
        Err(err) if code(&err) == Some("NoSuchEntity") => {
            let create = iam
                .create_role()
                .role_name(&name)
                .assume_role_policy_document(&trust)
                .permissions_boundary(&boundary_arn)
                .description(format!(
                    "ramen workers of group {} in zone {} (namespace {})",
                    placement.group, placement.zone, placement.namespace
                ))
                .set_tags(Some(tags(placement)));
            match create.send().await {
                Ok(created) => {
                    made.push("created".to_owned());
                    created.role().map(|r| r.arn().to_owned()).ok_or_else(|| no_role(&name))?
                }
                // Made by a concurrent call: the next ensure checks and updates it.
                Err(err) if code(&err) == Some("EntityAlreadyExists") => {
                    return Err(CloudError::Unavailable(format!(
                        "IAM role {name} was being created by another call; retrying"
                    )));
                }
                Err(err) => return Err(sdk_error("IAM", "CreateRole", err)),
            }
        }
        Err(err) => return Err(sdk_error("IAM", "GetRole", err)),
    };
    let rules = rule_statements(grants);
    let rules_made = format!("{} rule(s) in policy {POLICY_NAME}", grants.len());
    set_inline(iam, &name, POLICY_NAME, rules, rules_made, &mut made).await?;
    let blob = blob_statements(placement, bucket);
    let blob_made = format!("policy {BLOB_POLICY_NAME} set");
    set_inline(iam, &name, BLOB_POLICY_NAME, blob, blob_made, &mut made).await?;
    let note = format!(
        "IAM role {name}: {}",
        if made.is_empty() { "in place".into() } else { made.join(", ") }
    );
    Ok(Made { resources: vec![arn], note })
}

/// Makes the role's inline policy `policy` exactly `statements`, or removes it when there are
/// none.
async fn set_inline(
    iam: &Client,
    role: &str,
    policy: &str,
    statements: Vec<serde_json::Value>,
    note: String,
    made: &mut Vec<String>,
) -> Result<(), CloudError> {
    if statements.is_empty() {
        let delete = iam.delete_role_policy().role_name(role).policy_name(policy);
        return match delete.send().await {
            Ok(_) => {
                made.push(format!("policy {policy} removed (nothing to grant)"));
                Ok(())
            }
            Err(err) if code(&err) == Some("NoSuchEntity") => Ok(()),
            Err(err) => Err(sdk_error("IAM", "DeleteRolePolicy", err)),
        };
    }
    let document = json!({ "Version": "2012-10-17", "Statement": statements }).to_string();
    // A role just made may not be visible to every IAM endpoint yet.
    let mut attempt = 0;
    loop {
        let put =
            iam.put_role_policy().role_name(role).policy_name(policy).policy_document(&document);
        match put.send().await {
            Ok(_) => break,
            Err(err) if code(&err) == Some("NoSuchEntity") && attempt + 1 < ATTEMPTS => {
                pause(attempt).await;
                attempt += 1;
            }
            Err(err) if code(&err) == Some("MalformedPolicyDocument") => {
                return Err(CloudError::Refused(format!(
                    "IAM refused policy {policy} of role {role}: {}; fix the group's service-account rules on the group page",
                    aws_sdk_iam::error::DisplayErrorContext(&err)
                )));
            }
            Err(err) => return Err(sdk_error("IAM", "PutRolePolicy", err)),
        }
    }
    made.push(note);
    Ok(())
}

pub async fn remove(iam: &Client, placement: &PlacementRef<'_>) -> Result<Outcome, CloudError> {
    let name = names::role(placement.group, placement.zone);
    let role = match iam.get_role().role_name(&name).send().await {
        Ok(found) => found.role().cloned().ok_or_else(|| no_role(&name))?,
        Err(err) if code(&err) == Some("NoSuchEntity") => {
            return remove_boundary(iam, placement, &name).await;
        }
        Err(err) => return Err(sdk_error("IAM", "GetRole", err)),
    };
    if refuse_unless_ours(&format!("IAM role {name}"), role.tags(), placement).is_err() {
        return Ok(Outcome::Done(format!("IAM role {name} was not made by ramen; left alone")));
    }
    // Detach before delete: IAM refuses to delete a role that still has policies.
    let inline = iam.list_role_policies().role_name(&name).send().await;
    let inline = inline.map_err(|e| sdk_error("IAM", "ListRolePolicies", e))?;
    for policy in inline.policy_names() {
        let delete = iam.delete_role_policy().role_name(&name).policy_name(policy);
        match delete.send().await {
            Ok(_) => {}
            Err(err) if code(&err) == Some("NoSuchEntity") => {}
            Err(err) => return Err(sdk_error("IAM", "DeleteRolePolicy", err)),
        }
    }
    let attached = iam.list_attached_role_policies().role_name(&name).send().await;
    let attached = attached.map_err(|e| sdk_error("IAM", "ListAttachedRolePolicies", e))?;
    for policy in attached.attached_policies() {
        let Some(arn) = policy.policy_arn() else { continue };
        let detach = iam.detach_role_policy().role_name(&name).policy_arn(arn);
        match detach.send().await {
            Ok(_) => {}
            Err(err) if code(&err) == Some("NoSuchEntity") => {}
            Err(err) => return Err(sdk_error("IAM", "DetachRolePolicy", err)),
        }
    }
    match iam.delete_role().role_name(&name).send().await {
        Ok(_) => match remove_boundary(iam, placement, &name).await? {
            Outcome::Done(boundary) => {
                Ok(Outcome::Done(format!("IAM role {name} deleted; {boundary}")))
            }
            waiting => Ok(waiting),
        },
        Err(err) if code(&err) == Some("NoSuchEntity") => {
            remove_boundary(iam, placement, &name).await
        }
        Err(err) if code(&err) == Some("DeleteConflict") => Ok(Outcome::Waiting(format!(
            "IAM role {name} is still in use: {}",
            aws_sdk_iam::error::DisplayErrorContext(&err)
        ))),
        Err(err) => Err(sdk_error("IAM", "DeleteRole", err)),
    }
}

/// Only the namespace's ServiceAccount, through the cluster's OIDC provider, for STS.
pub fn trust_policy(placement: &PlacementRef<'_>) -> serde_json::Value {
    let cluster = placement.cluster;
    let issuer = cluster.oidc_provider.trim_end_matches('/');
    let provider = format!(
        "arn:{}:iam::{}:oidc-provider/{issuer}",
        names::partition(&cluster.region),
        cluster.account_id
    );
    let subject =
        format!("system:serviceaccount:{}:{}", placement.namespace, placement.service_account);
    json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": { "Federated": provider },
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": { "StringEquals": {
                format!("{issuer}:sub"): subject,
                format!("{issuer}:aud"): "sts.amazonaws.com",
            }},
        }],
    })
}

/// The rules' inline policy: one statement per rule, its actions on its resources (`*` when
/// it names none, which only bounds with `unscoped` let through).
pub fn rule_statements(grants: &[Grant]) -> Vec<serde_json::Value> {
    grants
        .iter()
        .enumerate()
        .map(|(i, grant)| {
            let resources: Vec<&str> = if grant.resources.is_empty() {
                vec!["*"]
            } else {
                grant.resources.iter().map(String::as_str).collect()
            };
            json!({
                "Sid": format!("Rule{i}"),
                "Effect": "Allow",
                "Action": grant.permissions,
                "Resource": resources,
            })
        })
        .collect()
}

/// What workers need of the bucket, limited to their group's prefix: read snapshots and
/// environments, write the environments their builders make, list under the prefix (without
/// it S3 answers a missing key with 403, not 404).
fn blob_statements(placement: &PlacementRef<'_>, bucket: &str) -> Vec<serde_json::Value> {
    if bucket.is_empty() {
        return Vec::new();
    }
    let partition = names::partition(&placement.cluster.region);
    let prefix = format!("groups/{}/", placement.group);
    let objects = |under: &str| format!("arn:{partition}:s3:::{bucket}/{prefix}{under}*");
    vec![
        json!({
            "Sid": "RamenBlobRead",
            "Effect": "Allow",
            "Action": ["s3:GetObject"],
            "Resource": [objects("")],
        }),
        json!({
            "Sid": "RamenBlobWriteEnvironments",
            "Effect": "Allow",
            "Action": ["s3:PutObject"],
            "Resource": [objects("environments/")],
        }),
        json!({
            "Sid": "RamenBlobList",
            "Effect": "Allow",
            "Action": ["s3:ListBucket"],
            "Resource": [format!("arn:{partition}:s3:::{bucket}")],
            "Condition": { "StringLike": { "s3:prefix": [format!("{prefix}*")] } },
        }),
    ]
}

/// The permissions boundary: the bounds' permissions on the bounds' resources (every resource
/// when `unscoped`), the group's prefix of the bucket, and an explicit deny of what the
/// bounds deny — which no allow anywhere can undo.
pub fn boundary_policy(
    placement: &PlacementRef<'_>,
    bounds: &ProviderBounds,
    bucket: &str,
) -> serde_json::Value {
    let mut statements = Vec::new();
    // Unscoped bounds let a rule name every resource; scoped ones only their patterns (with
    // none, no rule passes the check and the boundary allows nothing but the bucket).
    let resources: Vec<&str> = if bounds.unscoped {
        vec!["*"]
    } else {
        bounds.resources.iter().map(String::as_str).collect()
    };
    if !bounds.permissions.is_empty() && !resources.is_empty() {
        statements.push(json!({
            "Sid": "Bounds",
            "Effect": "Allow",
            "Action": bounds.permissions,
            "Resource": resources,
        }));
    }
    statements.extend(blob_statements(placement, bucket));
    if !bounds.denied.is_empty() {
        statements.push(json!({
            "Sid": "Denied",
            "Effect": "Deny",
            "Action": bounds.denied,
            "Resource": "*",
        }));
    }
    json!({ "Version": "2012-10-17", "Statement": statements })
}

/// Creates the role's boundary policy, or makes its default version `document`; answers its
/// ARN. A policy of that name ramen did not make is refused, not changed.
async fn ensure_boundary(
    iam: &Client,
    placement: &PlacementRef<'_>,
    role: &str,
    document: &serde_json::Value,
    made: &mut Vec<String>,
) -> Result<String, CloudError> {
    let name = boundary_name(role);
    let arn = boundary_arn(placement, role);
    let found = match iam.get_policy().policy_arn(&arn).send().await {
        Ok(found) => found.policy().cloned(),
        Err(err) if code(&err) == Some("NoSuchEntity") => None,
        Err(err) => return Err(sdk_error("IAM", "GetPolicy", err)),
    };
    let Some(policy) = found else {
        let create = iam
            .create_policy()
            .policy_name(&name)
            .path(BOUNDARY_PATH)
            .description(format!(
                "ramen: the most the workers of {}/{} may be granted",
                placement.group, placement.zone
            ))
            .policy_document(document.to_string())
            .set_tags(Some(tags(placement)));
        return match create.send().await {
            Ok(created) => {
                made.push(format!("boundary {name} created"));
                Ok(created.policy().and_then(|p| p.arn()).unwrap_or(&arn).to_owned())
            }
            Err(err) if code(&err) == Some("EntityAlreadyExists") => Err(CloudError::Unavailable(
                format!("IAM policy {name} was being created by another call; retrying"),
            )),
            Err(err) => Err(sdk_error("IAM", "CreatePolicy", err)),
        };
    };
    refuse_unless_ours(&format!("IAM policy {name}"), policy.tags(), placement)?;
    let default = policy.default_version_id().unwrap_or("v1");
    let version = iam.get_policy_version().policy_arn(&arn).version_id(default).send().await;
    let version = version.map_err(|e| sdk_error("IAM", "GetPolicyVersion", e))?;
    let current = version.policy_version().and_then(|v| v.document()).map(url_decode);
    let current: Option<serde_json::Value> =
        current.and_then(|text| serde_json::from_str(&text).ok());
    if current.as_ref() == Some(document) {
        return Ok(arn);
    }
    let listed = iam.list_policy_versions().policy_arn(&arn).send().await;
    let listed = listed.map_err(|e| sdk_error("IAM", "ListPolicyVersions", e))?;
    let mut old: Vec<_> = listed.versions().iter().filter(|v| !v.is_default_version()).collect();
    if listed.versions().len() >= MAX_POLICY_VERSIONS {
        old.sort_by_key(|v| v.create_date().map(|d| d.secs()));
        if let Some(oldest) = old.first().and_then(|v| v.version_id()) {
            let delete = iam.delete_policy_version().policy_arn(&arn).version_id(oldest);
            match delete.send().await {
                Ok(_) => {}
                Err(err) if code(&err) == Some("NoSuchEntity") => {}
                Err(err) => return Err(sdk_error("IAM", "DeletePolicyVersion", err)),
            }
        }
    }
    let create = iam
        .create_policy_version()
        .policy_arn(&arn)
        .policy_document(document.to_string())
        .set_as_default(true);
    create.send().await.map_err(|e| sdk_error("IAM", "CreatePolicyVersion", e))?;
    made.push(format!("boundary {name} updated"));
    Ok(arn)
}

/// Deletes the role's boundary policy (its old versions first, as IAM requires).
async fn remove_boundary(
    iam: &Client,
    placement: &PlacementRef<'_>,
    role: &str,
) -> Result<Outcome, CloudError> {
    let name = boundary_name(role);
    let arn = boundary_arn(placement, role);
    let gone = || Ok(Outcome::Done(format!("IAM role {role} and policy {name} are gone")));
    let policy = match iam.get_policy().policy_arn(&arn).send().await {
        Ok(found) => found.policy().cloned(),
        Err(err) if code(&err) == Some("NoSuchEntity") => return gone(),
        Err(err) => return Err(sdk_error("IAM", "GetPolicy", err)),
    };
    let Some(policy) = policy else { return gone() };
    if refuse_unless_ours(&format!("IAM policy {name}"), policy.tags(), placement).is_err() {
        return Ok(Outcome::Done(format!("IAM policy {name} was not made by ramen; left alone")));
    }
    let listed = iam.list_policy_versions().policy_arn(&arn).send().await;
    let listed = listed.map_err(|e| sdk_error("IAM", "ListPolicyVersions", e))?;
    for version in listed.versions().iter().filter(|v| !v.is_default_version()) {
        let Some(id) = version.version_id() else { continue };
        match iam.delete_policy_version().policy_arn(&arn).version_id(id).send().await {
            Ok(_) => {}
            Err(err) if code(&err) == Some("NoSuchEntity") => {}
            Err(err) => return Err(sdk_error("IAM", "DeletePolicyVersion", err)),
        }
    }
    match iam.delete_policy().policy_arn(&arn).send().await {
        Ok(_) => Ok(Outcome::Done(format!("policy {name} deleted"))),
        Err(err) if code(&err) == Some("NoSuchEntity") => gone(),
        Err(err) if code(&err) == Some("DeleteConflict") => Ok(Outcome::Waiting(format!(
            "IAM policy {name} is still attached: {}",
            aws_sdk_iam::error::DisplayErrorContext(&err)
        ))),
        Err(err) => Err(sdk_error("IAM", "DeletePolicy", err)),
    }
}

fn boundary_arn(placement: &PlacementRef<'_>, role: &str) -> String {
    let cluster = placement.cluster;
    format!(
        "arn:{}:iam::{}:policy{BOUNDARY_PATH}{}",
        names::partition(&cluster.region),
        cluster.account_id,
        boundary_name(role)
    )
}

fn tags(placement: &PlacementRef<'_>) -> Vec<Tag> {
    let tag = |key: &str, value: &str| Tag::builder().key(key).value(value).build();
    [
        tag(MANAGED_BY_TAG, MANAGED_BY),
        tag(GROUP_TAG, placement.group),
        tag(ZONE_TAG, placement.zone),
    ]
    .into_iter()
    .collect::<Result<_, _>>()
    .expect("tags have a key and a value")
}

fn refuse_unless_ours(
    what: &str,
    tags: &[Tag],
    placement: &PlacementRef<'_>,
) -> Result<(), CloudError> {
    let has = |key: &str, value: &str| tags.iter().any(|t| t.key() == key && t.value() == value);
    if has(MANAGED_BY_TAG, MANAGED_BY)
        && has(GROUP_TAG, placement.group)
        && has(ZONE_TAG, placement.zone)
    {
        return Ok(());
    }
    Err(CloudError::NotOurs(format!(
        "{what} exists and ramen did not make it for {}/{} (no tags {MANAGED_BY_TAG}={MANAGED_BY}, \
         {GROUP_TAG}={}, {ZONE_TAG}={}); remove it or pick another zone name",
        placement.group, placement.zone, placement.group, placement.zone
    )))
}

fn no_role(name: &str) -> CloudError {
    CloudError::Unavailable(format!("IAM answered without the role {name}"))
}
