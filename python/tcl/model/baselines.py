"""Baseline sequence models on the same tokens: TLP-style attention and an LSTM."""

from __future__ import annotations

import torch
from torch import nn

from tcl.model.common import ModelConfig, SequenceCostModel


class AttentionCostModel(SequenceCostModel):
    """TLP's model: self-attention over the schedule's step vectors."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.position = nn.Parameter(torch.zeros(1, config.max_len, config.d_model))
        layer = nn.TransformerEncoderLayer(
            config.d_model,
            config.n_heads,
            2 * config.d_model,
            config.dropout,
            batch_first=True,
            norm_first=True,
        )
        self.layers = nn.TransformerEncoder(layer, config.n_layers, enable_nested_tensor=False)

    def body(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        x = x + self.position[:, : x.shape[1]]
        return self.layers(x, src_key_padding_mask=padding)


class LSTMCostModel(SequenceCostModel):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.lstm = nn.LSTM(config.d_model, config.d_model, config.n_layers, batch_first=True)

    def body(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        return self.lstm(x)[0]
