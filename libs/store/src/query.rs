use serde_json::Value;

use crate::StoreError;
use crate::validate::{check_field_path, check_value};

/// A condition on one dotted field path (`_id` is the document id). Semantics follow
/// MongoDB's: `Eq(null)` also matches a missing field, `Ne(x)` matches a missing field, a
/// field holding an array matches when the array itself or any element does, and the
/// ordering operators take a number or a string and compare only like with like (numbers
/// numerically, strings bytewise).
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Eq(Value),
    Ne(Value),
    In(Vec<Value>),
    Gt(Value),
    Gte(Value),
    Lt(Value),
    Lte(Value),
    Exists(bool),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub field: String,
    pub op: Op,
}

/// All conditions must hold (AND). The empty filter matches every document.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    pub conditions: Vec<Condition>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

/// A filtered, sorted page. Results come sorted by `sort`, then by id, so paging is stable.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Query {
    pub filter: Filter,
    pub sort: Vec<(String, Order)>,
    pub skip: u64,
    pub limit: Option<u64>,
}

macro_rules! filter_ops {
    ($($(#[$doc:meta])* $name:ident => $variant:ident),* $(,)?) => {
        impl Filter {
            $($(#[$doc])* pub fn $name(self, field: &str, value: impl Into<Value>) -> Self {
                self.with(field, Op::$variant(value.into()))
            })*
        }
        impl Query {
            $($(#[$doc])* pub fn $name(mut self, field: &str, value: impl Into<Value>) -> Self {
                self.filter = self.filter.$name(field, value);
                self
            })*
        }
    };
}

filter_ops! {
    eq => Eq,
    ne => Ne,
    gt => Gt,
    gte => Gte,
    lt => Lt,
    lte => Lte,
}

impl Filter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with(mut self, field: &str, op: Op) -> Self {
        self.conditions.push(Condition { field: field.to_owned(), op });
        self
    }

    /// The field equals one of `values`.
    pub fn is_in<V: Into<Value>>(self, field: &str, values: impl IntoIterator<Item = V>) -> Self {
        self.with(field, Op::In(values.into_iter().map(Into::into).collect()))
    }

    pub fn exists(self, field: &str, present: bool) -> Self {
        self.with(field, Op::Exists(present))
    }

    pub(crate) fn validate(&self) -> Result<(), StoreError> {
        for cond in &self.conditions {
            check_field_path(&cond.field).map_err(|e| StoreError::InvalidQuery(e.to_string()))?;
            match &cond.op {
                Op::Eq(v) | Op::Ne(v) => check_value(v, "filter")?,
                Op::In(vs) => vs.iter().try_for_each(|v| check_value(v, "filter"))?,
                Op::Gt(v) | Op::Gte(v) | Op::Lt(v) | Op::Lte(v) => {
                    if !(v.is_number() || v.is_string()) {
                        return Err(StoreError::InvalidQuery(format!(
                            "`{}`: ordering comparisons take a number or a string, not {v}",
                            cond.field
                        )));
                    }
                    check_value(v, "filter")?;
                }
                Op::Exists(_) => {}
            }
        }
        Ok(())
    }
}

impl Query {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    pub fn is_in<V: Into<Value>>(
        mut self,
        field: &str,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        self.filter = self.filter.is_in(field, values);
        self
    }

    pub fn exists(mut self, field: &str, present: bool) -> Self {
        self.filter = self.filter.exists(field, present);
        self
    }

    pub fn sort_asc(mut self, field: &str) -> Self {
        self.sort.push((field.to_owned(), Order::Asc));
        self
    }

    pub fn sort_desc(mut self, field: &str) -> Self {
        self.sort.push((field.to_owned(), Order::Desc));
        self
    }

    pub fn skip(mut self, skip: u64) -> Self {
        self.skip = skip;
        self
    }

    pub fn limit(mut self, limit: u64) -> Self {
        self.limit = Some(limit);
        self
    }

    pub(crate) fn validate(&self) -> Result<(), StoreError> {
        self.filter.validate()?;
        for (field, _) in &self.sort {
            check_field_path(field).map_err(|e| StoreError::InvalidQuery(e.to_string()))?;
        }
        Ok(())
    }
}
