#!/usr/bin/env bash
# Collects the starter dataset (data/): every zoo network on three platform presets, 48 programs
# per task, network by network and platform by platform so that they grow together. The
# 1-thread platforms come first: their runner is pinned to one core, so the machine stays usable.
# Resumable: run it again after any interruption. Usage: scripts/collect_starter.sh OUT_ROOT [PROGRAMS]
set -u
out=${1:?usage: collect_starter.sh OUT_ROOT [PROGRAMS]}
programs=${2:-48}
networks="bert_tiny resnet18 mobilenet_v2 squeezenet gpt2_block resnet50 dcgan bert_base mlp_mixer
vit_tiny vgg11 resnext50 resnet34 mobilenet_v3_small vgg16 densenet121 llama_block convnext_atto
t5_encoder efficientnet_b0 falcon_block regnetx_400mf conformer shufflenet_v2 deeplab_v3 unet"
platforms="cpu-avx2-1t cpu-x86-64-1t cpu-native-2t"
# On a fresh machine, resume from the committed snapshot.
"$(dirname "$0")/restore_dataset.sh" "$out"
for net in $networks; do
  for platform in $platforms; do
    echo "=== $(date -u +%FT%TZ) $net on $platform"
    tcl collect --network "$net" --platform "$platform" --programs-per-task "$programs" --out "$out" \
      || echo "=== $net on $platform failed with exit $?"
  done
done
echo "=== $(date -u +%FT%TZ) done"
