"""The Hugging Face ``transformers`` networks that ``check_networks.py --transformers`` checks:
each built from its configuration class (nothing downloaded), two layers deep where the
configuration says how many, the weights drawn by PyTorch's own initialisation of each layer.

Hugging Face initialises with small normal weights (standard deviation 0.02), under which some
convolution networks' activations shrink to about 1e-6 by the last stage (MobileViT): a
comparison of outputs that small measures float32's cancellation, not the compiler. PyTorch's
per-layer initialisation keeps them at the scale of the inputs.
"""

from __future__ import annotations

from typing import Any

import torch

TWO = {"num_hidden_layers": 2}
SMALL = {"hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4}
DECODER = {**TWO, **SMALL, "num_key_value_heads": 2, "vocab_size": 1000}
SEQ2SEQ = {"d_model": 256, "encoder_attention_heads": 4, "decoder_attention_heads": 4}
SEQ2SEQ.update(encoder_layers=2, decoder_layers=2, encoder_ffn_dim=512, decoder_ffn_dim=512)
# name: (model class, configuration class, configuration, inputs)
NETWORKS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "bert": ("BertModel", "BertConfig", TWO, "tokens and mask"),
    "distilbert": ("DistilBertModel", "DistilBertConfig", {"n_layers": 2}, "tokens"),
    "roberta": ("RobertaModel", "RobertaConfig", TWO, "tokens"),
    "albert": ("AlbertModel", "AlbertConfig", TWO, "tokens"),
    "electra": ("ElectraModel", "ElectraConfig", TWO, "tokens"),
    "deberta_v2": ("DebertaV2Model", "DebertaV2Config", {**TWO, **SMALL}, "tokens"),
    "mpnet": ("MPNetModel", "MPNetConfig", TWO, "tokens"),
    "xlnet": ("XLNetModel", "XLNetConfig", {"n_layer": 2}, "tokens"),
    "squeezebert": ("SqueezeBertModel", "SqueezeBertConfig", TWO, "tokens"),
    "funnel": ("FunnelBaseModel", "FunnelConfig", {"block_sizes": [1, 1, 1]}, "tokens"),
    "gpt2": ("GPT2LMHeadModel", "GPT2Config", {"n_layer": 2}, "tokens"),
    "gpt_neo": (
        "GPTNeoModel",
        "GPTNeoConfig",
        {
            "num_layers": 2,
            "hidden_size": 256,
            "num_heads": 4,
            "attention_types": [[["global", "local"], 1]],
        },
        "tokens",
    ),
    "opt": (
        "OPTModel",
        "OPTConfig",
        {
            **TWO,
            "hidden_size": 256,
            "ffn_dim": 512,
            "num_attention_heads": 4,
            "word_embed_proj_dim": 256,
        },
        "tokens",
    ),
    "bloom": (
        "BloomModel",
        "BloomConfig",
        {"n_layer": 2, "hidden_size": 256, "n_head": 4},
        "tokens",
    ),
    "falcon": (
        "FalconModel",
        "FalconConfig",
        {**TWO, "hidden_size": 256, "num_attention_heads": 4},
        "tokens",
    ),
    "llama": ("LlamaForCausalLM", "LlamaConfig", DECODER, "tokens"),
    "mistral": ("MistralModel", "MistralConfig", {**DECODER, "sliding_window": 16}, "tokens"),
    "qwen2": ("Qwen2Model", "Qwen2Config", DECODER, "tokens"),
    "phi": ("PhiModel", "PhiConfig", {**TWO, **SMALL, "vocab_size": 1000}, "tokens"),
    "gemma": (
        "GemmaModel",
        "GemmaConfig",
        {**DECODER, "num_key_value_heads": 1, "head_dim": 64},
        "tokens",
    ),
    "mamba": ("MambaModel", "MambaConfig", {**TWO, "hidden_size": 256}, "tokens"),
    "t5": (
        "T5Model",
        "T5Config",
        {
            "num_layers": 2,
            "num_decoder_layers": 2,
            "d_model": 256,
            "d_ff": 512,
            "num_heads": 4,
            "d_kv": 64,
        },
        "tokens to tokens",
    ),
    "bart": ("BartModel", "BartConfig", SEQ2SEQ, "tokens"),
    "clip_text": ("CLIPTextModel", "CLIPTextConfig", TWO, "tokens"),
    "vit": ("ViTModel", "ViTConfig", TWO, "image"),
    "deit": ("DeiTModel", "DeiTConfig", TWO, "image"),
    "beit": ("BeitModel", "BeitConfig", TWO, "image"),
    "dinov2": ("Dinov2Model", "Dinov2Config", TWO, "image"),
    "clip_vision": ("CLIPVisionModel", "CLIPVisionConfig", TWO, "image"),
    "swin": ("SwinModel", "SwinConfig", {"depths": [1, 1, 1, 1]}, "image"),
    "convnext": ("ConvNextModel", "ConvNextConfig", {"depths": [1, 1, 1, 1]}, "image"),
    "resnet": ("ResNetModel", "ResNetConfig", {"depths": [1, 1, 1, 1]}, "image"),
    "regnet": ("RegNetModel", "RegNetConfig", {}, "image"),
    "efficientnet": ("EfficientNetModel", "EfficientNetConfig", {}, "image"),
    "mobilenet_v2": ("MobileNetV2Model", "MobileNetV2Config", {}, "image"),
    "mobilevit": ("MobileViTModel", "MobileViTConfig", {}, "image"),
    "levit": ("LevitModel", "LevitConfig", {}, "image"),
    "poolformer": ("PoolFormerModel", "PoolFormerConfig", {}, "image"),
    "segformer": ("SegformerModel", "SegformerConfig", {}, "image"),
    "dpt": ("DPTModel", "DPTConfig", TWO, "image"),
    "yolos": ("YolosModel", "YolosConfig", TWO, "image"),
    "whisper_encoder": ("WhisperEncoder", "WhisperConfig", SEQ2SEQ, "log-mel frames"),
    "wav2vec2": ("Wav2Vec2Model", "Wav2Vec2Config", TWO, "waveform"),
    "hubert": ("HubertModel", "HubertConfig", TWO, "waveform"),
}


def network(name: str) -> tuple[Any, tuple[Any, ...]]:
    """``(module, inputs)`` of a Hugging Face network: its first output (the last hidden state,
    or the logits), in eval mode."""
    import transformers

    model_class, config_class, settings, inputs = NETWORKS[name]
    torch.manual_seed(0)
    config = getattr(transformers, config_class)(**settings)
    if model_class == "WhisperEncoder":
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        model = WhisperEncoder(config)
    else:
        model = getattr(transformers, model_class)(config)
    for layer in model.modules():
        if hasattr(layer, "reset_parameters"):
            layer.reset_parameters()
    tokens = torch.randint(5, 1000, (1, 32))
    size = 384 if name == "dpt" else 224  # DPT's patch grid is for 384 pixels
    image = torch.randn(1, 3, size, size)
    example = {
        "tokens": (tokens,),
        "tokens and mask": (tokens, torch.ones_like(tokens)),
        "tokens to tokens": (tokens, tokens[:, :8]),
        "image": (image,),
        "log-mel frames": (torch.randn(1, 80, 3000),),
        "waveform": (torch.randn(1, 16000),),
    }[inputs]
    return FirstOutput(model.eval(), seq2seq=inputs == "tokens to tokens"), example


class FirstOutput(torch.nn.Module):
    """A Hugging Face model's first output alone (its key-value cache and the rest left out)."""

    def __init__(self, model: Any, seq2seq: bool) -> None:
        super().__init__()
        self.model, self.seq2seq = model, seq2seq

    def forward(self, *inputs: Any) -> Any:
        if self.seq2seq:
            return self.model(input_ids=inputs[0], decoder_input_ids=inputs[1])[0]
        return self.model(*inputs)[0]
