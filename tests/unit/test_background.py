"""BackgroundTasks hands a task's failure to its owner: a job whose own task failed ends."""

from __future__ import annotations

import asyncio

from sessioncluster.background import BackgroundTasks


def test_a_failed_task_is_handed_to_on_failure_and_a_good_one_is_not() -> None:
    failures: list[BaseException] = []

    async def fail() -> None:
        raise AssertionError("attempt #0 is RUNNING but a later attempt exists")

    async def succeed() -> None:
        return None

    async def main() -> None:
        tasks = BackgroundTasks("job", on_failure=failures.append)
        await asyncio.gather(tasks.start(fail()), tasks.start(succeed()),
                             return_exceptions=True)
        await asyncio.sleep(0)  # the done callbacks run
        assert len(tasks) == 0

    asyncio.run(main())
    assert [str(f) for f in failures] == ["attempt #0 is RUNNING but a later attempt exists"]
