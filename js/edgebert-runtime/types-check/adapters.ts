/**
 * Compile-only: each adapter accepts the objects of the runtime package it is written for, as that package's
 * published types declare them (`npm run typecheck`). A change in a runtime's API that the adapter does not follow
 * fails here.
 */
import * as tf from '@tensorflow/tfjs-core';
import { GraphModel } from '@tensorflow/tfjs-converter';
import { Tensor as LiteRtTensor, type CompiledModel } from '@litertjs/core';
import * as ortNode from 'onnxruntime-node';
import * as ortReactNative from 'onnxruntime-react-native';
import type { TensorflowModel } from 'react-native-fast-tflite';
import type { Model, tensor } from 'react-native-executorch';

import { executorch } from '../src/adapters/executorch.js';
import { fastTflite } from '../src/adapters/fast-tflite.js';
import { litertjs } from '../src/adapters/litertjs.js';
import { onnxruntime } from '../src/adapters/onnxruntime.js';
import { tfjs } from '../src/adapters/tfjs.js';
import type { RuntimeFactory } from '../src/index.js';

declare const nodeSession: ortNode.InferenceSession;
declare const reactNativeSession: ortReactNative.InferenceSession;
declare const tfliteModel: TensorflowModel;
declare const pte: Model;
declare const tensorFactory: typeof tensor;
declare const ioHandler: tf.io.IOHandler;
declare const litertModel: CompiledModel;

export const factories: RuntimeFactory[] = [
  onnxruntime({ session: nodeSession, Tensor: ortNode.Tensor }),
  onnxruntime({ session: reactNativeSession, Tensor: ortReactNative.Tensor }),
  tfjs({ tf, GraphModel }, { source: ioHandler, bucketSource: () => 'https://example.org/model-16.json' }),
  fastTflite(tfliteModel),
  litertjs({ model: litertModel, Tensor: LiteRtTensor }),
  executorch({ model: pte, tensor: tensorFactory }),
];
