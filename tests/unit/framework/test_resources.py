"""Resource-name predicates (extender/framework/resources.py, after upstream
``pkg/apis/core/v1/helper/helpers.go``)."""

from __future__ import annotations

from extender.framework.resources import (
    is_extended_resource_name,
    is_qualified_name,
    is_scalar_resource_name,
)


def test_resource_name_classification() -> None:
    assert is_extended_resource_name("example.com/gpu")
    assert not is_extended_resource_name("cpu")
    assert not is_extended_resource_name("kubernetes.io/something")
    assert not is_extended_resource_name("hugepages-2Mi")
    assert is_scalar_resource_name("hugepages-1Gi")
    assert is_scalar_resource_name("attachable-volumes-aws-ebs")
    assert is_scalar_resource_name("kubernetes.io/something")
    assert not is_scalar_resource_name("ephemeral-storage")


def test_qualified_name() -> None:
    assert is_qualified_name("example.com/gpu")
    assert is_qualified_name("gpu")
    assert not is_qualified_name("/gpu")
    assert not is_qualified_name("a/b/c")
    assert not is_qualified_name("bad name!")
    assert not is_qualified_name("x" * 64)
