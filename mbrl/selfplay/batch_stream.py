"""The endless stream of batches Lightning pulls from a data module."""

from __future__ import annotations

from torch.utils.data import DataLoader, IterableDataset


class BatchStream(IterableDataset):
    """Endless batches. It reports a length so that Lightning does not fetch a batch ahead:
    a prefetched batch would be sampled (and its moves played) before the checkpoint of the
    previous step, and lost on resume."""

    def __init__(self, source, length: int):  # source.next_batch() -> the next batch
        self.source = source
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __iter__(self):
        while (batch := self.source.next_batch()) is not None:  # None: the source is done
            yield batch


def stream_loader(source, length: int) -> DataLoader:
    """Lightning's loader over ``source.next_batch()``; ``length`` <= 0: endless."""
    return DataLoader(BatchStream(source, length if length > 0 else 2**62), batch_size=None)
