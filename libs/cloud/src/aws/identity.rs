//! The placement's IAM role: assumed by the namespace's ServiceAccount through the cluster's
//! OIDC provider (IRSA), with the group's AWS service-account rules as its one inline policy.

use aws_sdk_iam::Client;
use aws_sdk_iam::types::Tag;
use serde_json::json;

use super::errors::{code, sdk_error};
use crate::{
    ATTEMPTS, CloudError, GROUP_TAG, Grant, MANAGED_BY, MANAGED_BY_TAG, Made, Outcome,
    PlacementRef, ZONE_TAG, names, pause,
};

/// The inline policy holding the group's rules.
pub const POLICY_NAME: &str = "ramen-group-rules";

pub async fn ensure(
    iam: &Client,
    placement: &PlacementRef<'_>,
    grants: &[Grant],
) -> Result<Made, CloudError> {
    let name = names::role(placement.group, placement.zone);
    let trust = trust_policy(placement).to_string();
    let mut made = Vec::new();
    let arn = match iam.get_role().role_name(&name).send().await {
        Ok(found) => {
            let role = found.role().ok_or_else(|| no_role(&name))?;
            refuse_unless_ours(&name, role.tags(), placement)?;
            let update = iam.update_assume_role_policy().role_name(&name).policy_document(&trust);
            update.send().await.map_err(|e| sdk_error("IAM", "UpdateAssumeRolePolicy", e))?;
            role.arn().to_owned()
        }
        Err(err) if code(&err) == Some("NoSuchEntity") => {
            let create = iam
                .create_role()
                .role_name(&name)
                .assume_role_policy_document(&trust)
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
    if grants.is_empty() {
        let delete = iam.delete_role_policy().role_name(&name).policy_name(POLICY_NAME);
        match delete.send().await {
            Ok(_) => made.push(format!("policy {POLICY_NAME} removed (no rules)")),
            Err(err) if code(&err) == Some("NoSuchEntity") => {}
            Err(err) => return Err(sdk_error("IAM", "DeleteRolePolicy", err)),
        }
    } else {
        let document = permissions_policy(grants).to_string();
        // A role just made may not be visible to every IAM endpoint yet.
        let mut attempt = 0;
        loop {
            let put = iam
                .put_role_policy()
                .role_name(&name)
                .policy_name(POLICY_NAME)
                .policy_document(&document);
            match put.send().await {
                Ok(_) => break,
                Err(err) if code(&err) == Some("NoSuchEntity") && attempt + 1 < ATTEMPTS => {
                    pause(attempt).await;
                    attempt += 1;
                }
                Err(err) if code(&err) == Some("MalformedPolicyDocument") => {
                    return Err(CloudError::Refused(format!(
                        "IAM refused the group's service-account rules as a policy of role {name}: {}; fix the rules on the group page",
                        aws_sdk_iam::error::DisplayErrorContext(&err)
                    )));
                }
                Err(err) => return Err(sdk_error("IAM", "PutRolePolicy", err)),
            }
        }
        made.push(format!("{} rule(s) in policy {POLICY_NAME}", grants.len()));
    }
    let note = format!(
        "IAM role {name}: {}",
        if made.is_empty() { "in place".into() } else { made.join(", ") }
    );
    Ok(Made { resources: vec![arn], note })
}

pub async fn remove(iam: &Client, placement: &PlacementRef<'_>) -> Result<Outcome, CloudError> {
    let name = names::role(placement.group, placement.zone);
    let role = match iam.get_role().role_name(&name).send().await {
        Ok(found) => found.role().cloned().ok_or_else(|| no_role(&name))?,
        Err(err) if code(&err) == Some("NoSuchEntity") => {
            return Ok(Outcome::Done(format!("IAM role {name} is gone")));
        }
        Err(err) => return Err(sdk_error("IAM", "GetRole", err)),
    };
    if refuse_unless_ours(&name, role.tags(), placement).is_err() {
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
        Ok(_) => Ok(Outcome::Done(format!("IAM role {name} deleted"))),
        Err(err) if code(&err) == Some("NoSuchEntity") => {
            Ok(Outcome::Done(format!("IAM role {name} is gone")))
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

/// One statement per rule: its actions on its resources (`*` when it names none).
pub fn permissions_policy(grants: &[Grant]) -> serde_json::Value {
    let statements: Vec<serde_json::Value> = grants
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
        .collect();
    json!({ "Version": "2012-10-17", "Statement": statements })
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
    name: &str,
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
        "IAM role {name} exists and ramen did not make it for {}/{} (no tags {MANAGED_BY_TAG}={MANAGED_BY}, \
         {GROUP_TAG}={}, {ZONE_TAG}={}); remove it or pick another zone name",
        placement.group, placement.zone, placement.group, placement.zone
    )))
}

fn no_role(name: &str) -> CloudError {
    CloudError::Unavailable(format!("IAM answered without the role {name}"))
}
