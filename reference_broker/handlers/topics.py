"""CreateTopics (19), DeleteTopics (20) and CreatePartitions (37).

Kafka's rules (ControllerApis / ReplicationControlManager): illegal names INVALID_TOPIC_EXCEPTION;
names given twice in one request INVALID_REQUEST; existing topics TOPIC_ALREADY_EXISTS; partitions
and replication factor of -1 take the broker defaults, other values below 1 are INVALID_PARTITIONS /
INVALID_REPLICATION_FACTOR; a replication factor above the live brokers INVALID_REPLICATION_FACTOR;
manual assignments together with a count INVALID_REQUEST; bad configs INVALID_CONFIG; validate_only
checks everything and creates nothing."""

from __future__ import annotations

from collections import Counter

from kconform.codecs.errors import Errors
from kconform.codecs.messages import CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse

from ..security.acls import Operation
from ..topic_names import INTERNAL_TOPICS, topic_name_error
from . import handles
from .admin_access import cluster_allowed, topics_allowed


class TopicError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _check_new_topic(broker, topic) -> tuple[int, int, list[list[int]], dict[str, str]]:
    """(partitions, replication factor, replica assignment, configs) or TopicError."""
    reason = topic_name_error(topic.name)
    if reason:
        raise TopicError(Errors.INVALID_TOPIC_EXCEPTION, reason)
    if topic.name in broker.topics:
        raise TopicError(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.")
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise TopicError(
                Errors.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions or replicationFactor was not "
                "set to -1.",
            )
        assignment = sorted(topic.assignments, key=lambda a: a.partition_index)
        if [a.partition_index for a in assignment] != list(range(len(assignment))):
            raise TopicError(Errors.INVALID_REPLICA_ASSIGNMENT, "Partitions must be numbered 0 to N-1.")
        replicas = [list(a.broker_ids) for a in assignment]
        for ids in replicas:
            if not ids or len(set(ids)) != len(ids) or any(i not in broker.live_broker_ids for i in ids):
                raise TopicError(Errors.INVALID_REPLICA_ASSIGNMENT, f"Invalid replica assignment {ids}.")
        partitions, factor = len(replicas), len(replicas[0])
    else:
        partitions = broker.default_partitions if topic.num_partitions == -1 else topic.num_partitions
        factor = (
            broker.default_replication_factor if topic.replication_factor == -1 else topic.replication_factor
        )
        if partitions < 1:
            raise TopicError(
                Errors.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
            )
        if factor < 1:
            raise TopicError(
                Errors.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        live = broker.live_broker_ids
        if factor > len(live):
            raise TopicError(
                Errors.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {factor} time(s): The target replication factor "
                f"of {factor} cannot be reached because only {len(live)} broker(s) are registered.",
            )
        replicas = broker.assign_replicas(partitions, factor)
    configs: dict[str, str] = {}
    for c in topic.configs:
        configs[c.name] = c.value
    problem = broker.topic_config_problem(configs)
    if problem:
        raise TopicError(Errors.INVALID_CONFIG, problem)
    return partitions, factor, replicas, configs


# ReplicationControlManager bounds one controller operation to 10,000 metadata records (a topic record
# and one per partition); a larger request fails whole with POLICY_VIOLATION before anything is made.
MAX_RECORDS_PER_OPERATION = 10_000
_TOO_LARGE = "Unable to perform excessively large batch operation."


def _records_needed(broker, topic) -> int:
    if topic.assignments:
        return 1 + len(topic.assignments)
    return 1 + max(0, broker.default_partitions if topic.num_partitions == -1 else topic.num_partitions)


@handles(19)
async def create_topics(broker, ctx, request) -> CreateTopicsResponse:
    version = ctx.api_version
    counts = Counter(t.name for t in request.topics)
    if sum(_records_needed(broker, t) for t in request.topics) > MAX_RECORDS_PER_OPERATION:
        return CreateTopicsResponse(
            topics=[
                CreateTopicsResponse.CreatableTopicResult(
                    name=name,
                    error_code=Errors.POLICY_VIOLATION,
                    error_message=_TOO_LARGE,
                    num_partitions=-1,
                    replication_factor=-1,
                )
                for name in counts
            ]
        )
    # ControllerApis.createTopics: CREATE on the cluster or on each topic, else TOPIC_AUTHORIZATION_FAILED
    # (answered after the others); DESCRIBE_CONFIGS on a topic to see its configs in the answer
    single = [name for name, n in counts.items() if n == 1]
    creatable = (
        set(single)
        if cluster_allowed(broker, ctx, Operation.CREATE)
        else _topics(broker, ctx, Operation.CREATE, single)
    )
    describable = _topics(broker, ctx, Operation.DESCRIBE_CONFIGS, single)
    results, refused = [], []
    for topic in request.topics:
        result = CreateTopicsResponse.CreatableTopicResult(name=topic.name)
        if counts[topic.name] > 1:
            result.error_code = Errors.INVALID_REQUEST
            result.error_message = f"Duplicate topic name {topic.name}"
            results.append(result)
            continue
        if topic.name not in creatable:
            result.error_code, result.error_message = (
                Errors.TOPIC_AUTHORIZATION_FAILED,
                "Authorization failed.",
            )
            result.num_partitions = result.replication_factor = -1
            refused.append(result)
            continue
        try:
            partitions, factor, replicas, configs = _check_new_topic(broker, topic)
        except TopicError as exc:
            result.error_code, result.error_message = exc.code, exc.message
            result.num_partitions = result.replication_factor = -1
            results.append(result)
            continue
        result.num_partitions, result.replication_factor = partitions, factor
        if not request.validate_only:
            created = broker.create_topic(topic.name, replicas, configs)
            result.topic_id = created.topic_id
        if topic.name not in describable:  # ReplicationControlManager: no configs, no counts
            result.num_partitions = result.replication_factor = -1
            result.topic_config_error_code = Errors.TOPIC_AUTHORIZATION_FAILED
        elif version >= 5:
            result.configs = [
                CreateTopicsResponse.CreatableTopicConfigs(
                    name=entry.name,
                    value=entry.value,
                    read_only=entry.read_only,
                    config_source=entry.source,
                    is_sensitive=entry.is_sensitive,
                )
                for entry in broker.describe_topic_configs(configs)
            ]
        results.append(result)
    # names given twice are answered once, as Kafka's response map does
    seen: set[str] = set()
    unique = [r for r in results if not (r.name in seen or seen.add(r.name))]
    return CreateTopicsResponse(topics=unique + refused)


def _topics(broker, ctx, operation: Operation, names) -> set[str]:
    return topics_allowed(broker, ctx, operation, names)


@handles(20)
async def delete_topics(broker, ctx, request) -> DeleteTopicsResponse:
    version = ctx.api_version
    if version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        from kconform.codecs.constants import ZERO_UUID

        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    # ControllerApis.deleteTopics: DELETE on the cluster or on each topic; a name the principal may not
    # DESCRIBE is TOPIC_AUTHORIZATION_FAILED before anyone looks whether it exists
    found = [broker.topics.get(n) if n is not None else broker.topics.by_id(i) for n, i in wanted]
    names = {n for n, _ in wanted if n is not None} | {t.name for t in found if t is not None}
    if cluster_allowed(broker, ctx, Operation.DELETE):
        describable = deletable = names
    else:
        describable = _topics(broker, ctx, Operation.DESCRIBE, names)
        deletable = _topics(broker, ctx, Operation.DELETE, names)
    responses = []
    counts = Counter(w for w in wanted)
    for name, topic_id in wanted:
        result = DeleteTopicsResponse.DeletableTopicResult(name=name, topic_id=topic_id)
        topic = broker.topics.get(name) if name is not None else broker.topics.by_id(topic_id)
        if counts[(name, topic_id)] > 1:
            result.error_code = Errors.INVALID_REQUEST
            result.error_message = "Duplicate topic in the request"
        elif name is not None and topic_id.int != 0:
            result.error_code = Errors.INVALID_REQUEST
            result.error_message = "A topic name and id were both given"
        elif name is not None and name not in describable:
            result.error_code = Errors.TOPIC_AUTHORIZATION_FAILED
        elif topic is None:
            result.error_code = Errors.UNKNOWN_TOPIC_ID if name is None else Errors.UNKNOWN_TOPIC_OR_PARTITION
            result.error_message = "This server does not host this topic ID." if name is None else None
        elif topic.name not in deletable:  # by id, the name only to whom may describe it
            result.error_code = Errors.TOPIC_AUTHORIZATION_FAILED
            result.name = topic.name if topic.name in describable else None
        elif topic.name in INTERNAL_TOPICS:
            result.error_code = Errors.TOPIC_AUTHORIZATION_FAILED
        else:
            result.name, result.topic_id = topic.name, topic.topic_id
            broker.delete_topic(topic.name)
        if version < 5:
            result.error_message = None
        responses.append(result)
    return DeleteTopicsResponse(responses=responses)


@handles(37)
async def create_partitions(broker, ctx, request) -> CreatePartitionsResponse:
    counts = Counter(t.name for t in request.topics)
    added = 0
    for entry in request.topics:
        topic = broker.topics.get(entry.name)
        if topic is not None:
            added += max(0, entry.count - len(topic.partitions))
    if added > MAX_RECORDS_PER_OPERATION:
        return CreatePartitionsResponse(
            results=[
                CreatePartitionsResponse.CreatePartitionsTopicResult(
                    name=name, error_code=Errors.POLICY_VIOLATION, error_message=_TOO_LARGE
                )
                for name in counts
            ]
        )
    # ControllerApis.createPartitions: ALTER on each topic, asked before anyone looks whether it exists
    alterable = _topics(broker, ctx, Operation.ALTER, counts)
    results = []
    for entry in request.topics:
        result = CreatePartitionsResponse.CreatePartitionsTopicResult(name=entry.name)
        topic = broker.topics.get(entry.name)
        if counts[entry.name] > 1:
            result.error_code, result.error_message = Errors.INVALID_REQUEST, "Duplicate topic name."
        elif entry.name not in alterable:
            result.error_code = Errors.TOPIC_AUTHORIZATION_FAILED
        elif topic is None:
            result.error_code = Errors.UNKNOWN_TOPIC_OR_PARTITION
            result.error_message = f"Topic {entry.name} does not exist"
        elif entry.count < len(topic.partitions):
            result.error_code = Errors.INVALID_PARTITIONS
            result.error_message = (
                f"The topic {entry.name} currently has {len(topic.partitions)} partition(s); "
                f"{entry.count} would not be an increase."
            )
        elif entry.count == len(topic.partitions):
            result.error_code = Errors.INVALID_PARTITIONS
            result.error_message = f"Topic already has {entry.count} partition(s)."
        elif entry.assignments is not None and len(entry.assignments) != entry.count - len(topic.partitions):
            result.error_code = Errors.INVALID_REPLICA_ASSIGNMENT
            result.error_message = (
                f"Attempted to add {entry.count - len(topic.partitions)} additional partition(s), but only "
                f"{len(entry.assignments)} assignment(s) were specified."
            )
        elif not request.validate_only:
            added = entry.count - len(topic.partitions)
            if entry.assignments is not None:
                replicas = [list(a.broker_ids) for a in entry.assignments]
            else:
                replicas = broker.assign_replicas(
                    added, topic.replication_factor, start=len(topic.partitions)
                )
            broker.add_partitions(entry.name, replicas)
        results.append(result)
    return CreatePartitionsResponse(results=results)
