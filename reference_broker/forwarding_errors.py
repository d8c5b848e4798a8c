"""The answer a broker gives for a forwarded request the controller did not answer: the request's own
error response (Kafka's ``AbstractRequest.getErrorResponse``), which names every topic or partition the
request named with the error, as each request class builds it."""

from __future__ import annotations

from kconform.codecs import api_schema
from kconform.codecs.errors import Errors
from kconform.codecs.messages import (
    AlterClientQuotasResponse,
    AlterPartitionReassignmentsResponse,
    AlterUserScramCredentialsResponse,
    CreatePartitionsResponse,
    CreateTopicsResponse,
    DeleteTopicsResponse,
    ElectLeadersResponse,
    ListPartitionReassignmentsResponse,
)

__all__ = ["error_message", "request_error_response"]

# ``ApiError.fromThrowable``: UNKNOWN_SERVER_ERROR carries the error's own text, a timeout none
_UNKNOWN_SERVER_ERROR = "The server experienced an unexpected error when processing the request."


def error_message(code: int) -> str | None:
    return _UNKNOWN_SERVER_ERROR if code == Errors.UNKNOWN_SERVER_ERROR else None


def _create_topics(request, version, code, message):
    Result = CreateTopicsResponse.CreatableTopicResult
    return CreateTopicsResponse(
        topics=[Result(name=t.name, error_code=code, error_message=message) for t in request.topics]
    )


def _delete_topics(request, version, code, message):
    Result = DeleteTopicsResponse.DeletableTopicResult
    if version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, Result().topic_id) for name in request.topic_names]
    return DeleteTopicsResponse(
        responses=[Result(name=name, topic_id=topic_id, error_code=code) for name, topic_id in wanted]
    )


def _create_partitions(request, version, code, message):
    Result = CreatePartitionsResponse.CreatePartitionsTopicResult
    return CreatePartitionsResponse(
        results=[Result(name=t.name, error_code=code, error_message=message) for t in request.topics]
    )


def _elect_leaders(request, version, code, message):
    Result, Partition = ElectLeadersResponse.ReplicaElectionResult, ElectLeadersResponse.PartitionResult
    results = [
        Result(
            topic=t.topic,
            partition_result=[
                Partition(partition_id=p, error_code=code, error_message=message) for p in t.partitions
            ],
        )
        for t in request.topic_partitions or ()
    ]
    return ElectLeadersResponse(error_code=code, replica_election_results=results)


def _alter_reassignments(request, version, code, message):
    Topic = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
    Partition = AlterPartitionReassignmentsResponse.ReassignablePartitionResponse
    topics = [
        Topic(
            name=t.name,
            partitions=[
                Partition(partition_index=p.partition_index, error_code=code, error_message=message)
                for p in t.partitions
            ],
        )
        for t in request.topics
    ]
    return AlterPartitionReassignmentsResponse(error_code=code, error_message=message, responses=topics)


def _list_reassignments(request, version, code, message):
    Topic = ListPartitionReassignmentsResponse.OngoingTopicReassignment
    Partition = ListPartitionReassignmentsResponse.OngoingPartitionReassignment
    topics = [
        Topic(name=t.name, partitions=[Partition(partition_index=i) for i in t.partition_indexes])
        for t in request.topics or ()
    ]
    return ListPartitionReassignmentsResponse(error_code=code, error_message=message, topics=topics)


def _alter_client_quotas(request, version, code, message):
    Entry, Entity = AlterClientQuotasResponse.EntryData, AlterClientQuotasResponse.EntityData
    entries = [
        Entry(
            error_code=code,
            error_message=message,
            entity=[Entity(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity],
        )
        for entry in request.entries
    ]
    return AlterClientQuotasResponse(entries=entries)


def _alter_scram_credentials(request, version, code, message):
    named = {d.name for d in request.deletions} | {u.name for u in request.upsertions}
    users = sorted(named, key=lambda user: user.encode("utf-16-be"))  # Java's String order
    Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
    return AlterUserScramCredentialsResponse(
        results=[Result(user=user, error_code=code, error_message=message) for user in users]
    )


_BUILDERS = {
    19: _create_topics,
    20: _delete_topics,
    37: _create_partitions,
    43: _elect_leaders,
    45: _alter_reassignments,
    46: _list_reassignments,
    49: _alter_client_quotas,
    51: _alter_scram_credentials,
}


def request_error_response(api_key: int, version: int, request, code: int, message: str | None = None):
    """The response ``request`` gets when it fails whole with ``code``; an API without a builder here
    gets its empty response with a top-level ``error_code`` where it has one."""
    builder = _BUILDERS.get(api_key)
    if builder is not None:
        return builder(request, version, code, message)
    response = api_schema(api_key).response()
    if hasattr(response, "error_code"):
        response.error_code = code
    return response
