import {
  OperationNodeTransformer,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type PrimitiveValueListNode,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
  type ValueNode,
} from 'kysely';
import { TextWithNulError } from './types.js';

/** Throws TextWithNulError at the first string value holding U+0000; changes nothing in the tree. */
class NulTextFinder extends OperationNodeTransformer {
  protected override transformValue(node: ValueNode): ValueNode {
    if (typeof node.value === 'string' && node.value.includes('\u0000')) throw new TextWithNulError();
    return node;
  }

  protected override transformPrimitiveValueList(node: PrimitiveValueListNode): PrimitiveValueListNode {
    for (const value of node.values) {
      if (typeof value === 'string' && value.includes('\u0000')) throw new TextWithNulError();
    }
    return node;
  }
}

/**
 * PostgreSQL cannot hold U+0000 in text (`invalid byte sequence for encoding "UTF8": 0x00`, raised by the server
 * as an error of the query); SQLite stores it. So that both backends answer a NUL alike, every query refuses a
 * string parameter holding one before it reaches either driver, writes and lookups alike (a lookup could not
 * match anything anyway). The services refuse such text first with a 400 naming the field; this is the net
 * under every other path (query parameters, redemption codes, admin searches), answered 400 as well.
 */
export class RefuseNulTextPlugin implements KyselyPlugin {
  private readonly finder = new NulTextFinder();

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.finder.transformNode(args.node);
    return args.node;
  }

  transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return Promise.resolve(args.result);
  }
}
